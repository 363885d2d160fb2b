"""The display policy: how a value is written for a person, the same in every view (the
command line, the report and the display fields of --json).

Identity values (lane, dtypes, suite, key ids, digests, engine versions) are written as
they are recorded: never shortened, never respelled (`fp8_e4m3` everywhere, as
`--where precision.kv_cache=fp8_e4m3` takes it), and a table never breaks one (the CLI's
`Grid` keeps a word whole; docs/cli.md "Tables"). What is not known is written one way,
a number one way, an id prefix at one length.
"""

from __future__ import annotations

ID_DIGITS = 12  # a record or verification id in a view, as git's short hashes (full in --json)
KEY_DIGITS = 16  # a key id, as `registry keys list` and every message write it
COMMIT_DIGITS = 12  # a git commit, as git writes its short hashes
UNRESOLVED = "?"  # an identity value the evidence did not settle (its status says why)
NOT_JUDGED = "not judged"  # a figure with no measurement judgement (imported, old records)
NOT_APPLICABLE = "not applicable"  # a check that cannot apply (one run: no self-consistency)
NO_FIGURE = "-"  # a record that has results, but not this figure


def short_id(value: str | None) -> str:
    """A record or verification id as every view writes it: 12 hex digits."""
    return (value or "")[:ID_DIGITS]


def commit(value: str | None) -> str:
    return (value or "")[:COMMIT_DIGITS]


def identity(value: object) -> str:
    """An identity value as recorded (a dtype, a lane, an engine version), or
    `?`; never shortened."""
    if value is None or value == "":
        return UNRESOLVED
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def precision(weights: object, activations: object) -> str:
    """Weights and the matmuls' input as one text in every view (`fp8 activations=fp8`,
    `fp8 activations=bfloat16`: W8A16), weights alone where the activations are
    unresolved: never one token that claims both (`fp8-w8a8`) from the weights."""
    shown = identity(weights)
    return shown if activations is None else f"{shown} activations={identity(activations)}"


def against(declared: object, by: str | None, resolved: object, evidence: str | None) -> str:
    """A declaration the evidence contradicts, one way in every view: `declared 4
    (launch.json: argv), evidence 2 (server.log:30)`: both values and where each is."""
    return (f"declared {identity(declared)}" + (f" ({by})" if by else "")
            + f", evidence {identity(resolved)}" + (f" ({evidence})" if evidence else ""))


def number(value: float | int | None) -> str:
    """A figure one way in every view: whole numbers in plain digits (`1112832`, as
    --json and CSV have them), others to 6 significant figures; `-` for none."""
    if value is None:
        return NO_FIGURE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def quality(word: str | None) -> str:
    """A measurement's quality as a word: `valid`, `degraded`, or `not judged`."""
    return word or NOT_JUDGED


def record_quality(word: str | None, imported: bool) -> str | None:
    """A record's quality in every view and in --json: an imported record whose capsule
    carried no rows to judge is `not judged` (docs/import.md); a sealed record with no
    results has no quality at all (None)."""
    return word or (NOT_JUDGED if imported else None)


def flagged(text: str, word: str | None) -> str:
    """A figure with its quality beside it unless valid: `733.75 (degraded)`."""
    return text if word == "valid" else f"{text} ({quality(word)})"


def when(iso: str | None) -> str:
    """A timestamp to the minute, as every table writes it."""
    return (iso or "")[:16].replace("T", " ")


def verdict_word(status: str) -> str:
    """A contract verdict as a view writes it: `refused` (the contract cannot judge this
    run: one run where self-consistency needs two, no teacher, another precision) is
    `not applicable`, never shown as a failure."""
    return NOT_APPLICABLE if status == "refused" else status
