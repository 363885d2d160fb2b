"""One display policy (registry/formats/display.py): every id a person reads is written
by `short_id` (12 digits), never sliced by hand; the other formula's decode figure is
shown under the lab's name with its formula, never as `decode_tok_s_other_formula`."""

from __future__ import annotations

import re

from registry.formats.display import ID_DIGITS, figure_label, metric_label, short_id
from tests.conftest import ROOT

# Packages other work owns at the moment; their hand-cut ids are routed when it lands.
PENDING: tuple[str, ...] = ()  # packages whose shown ids are not yet routed: none
SLICE = re.compile(r"(?:id|keyid|sha256|sha|ref|record|verification|original|parent|target"
                   r"|control|digest|commit|head|before|after|\)|\])\[:(?:8|10|12|16|20|24)\]")
NOT_IDS = {"registry/formats/display.py"}  # the policy itself
NOT_SHOWN = ("hexdigest()", "int(record_id[:8], 16)")  # a file name, a number: nothing shown


def test_no_id_is_cut_by_hand_outside_the_display_policy() -> None:
    found = []
    for path in sorted((ROOT / "registry").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in NOT_IDS or name.split("/")[1] in PENDING:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if SLICE.search(line) and not any(k in line for k in NOT_SHOWN):
                found.append(f"{name}:{n}: {line.strip()}")
    assert not found, "ids cut by hand (use display.short_id):\n" + "\n".join(found)


def test_one_id_length() -> None:
    full = "ab" * 32
    assert short_id(full) == full[:ID_DIGITS] and ID_DIGITS == 12
    assert short_id(None) == ""


def test_the_other_formula_is_shown_under_the_labs_name() -> None:
    legacy = "median over unflagged rows of 100 / (t[99] - t[0])"
    assert metric_label("decode_tok_s.median", "median over unflagged rows of "
                        "99 / (t[99] - t[0])") == "decode_tok_s.median"
    assert metric_label("decode_tok_s_other_formula.median", legacy) == \
        "decode_tok_s.median (100/(t[99]-t[0]))"
    assert metric_label("decode_tok_s_other_formula.p10", None) == \
        "decode_tok_s.p10 (other formula)"
    assert metric_label("ttft_ms.p50", "x") == "ttft_ms.p50"
    assert figure_label("tiny-cold/decode_tok_s_other_formula.median", legacy) == \
        "tiny-cold/decode_tok_s.median (100/(t[99]-t[0]))"
    assert figure_label("tiny-cold/decode_tok_s.median") == "tiny-cold/decode_tok_s.median"
