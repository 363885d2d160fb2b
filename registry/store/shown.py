"""One record as `registry show` presents it: its checked statement, the ledger commit
that added it and every trusted verification that judged it."""

from pydantic import Field

from registry.base.canonical import is_git_sha
from registry.base.model import Frozen, empty_list
from registry.formats.display import short_id
from registry.formats.record import Statement, parse_statement
from registry.measure.evidence import StartEvidence
from registry.signing.signed import SignatureCheck
from registry.store.home import Home
from registry.store.ledger import adding_commit, statement_paths
from registry.store.query import checked_statement, readable_index
from registry.store.verifications import StoredVerification, verifications_of


class ShownRecord(Frozen):
    id: str
    ledger_commit: str | None
    check: SignatureCheck  # the signer is named only when it is trusted
    statement: Statement
    artifacts: tuple[str, ...] = ()  # what is wrong with the signed artifacts in the store
    artifacts_changed: bool = False  # an artifact's bytes changed (not merely missing)
    verifications: list[StoredVerification] = Field(
        default_factory=empty_list, description="trusted attestations that judged this record")
    starts: list[StartEvidence] = Field(
        default_factory=list, description="each engine start's disturbance evidence, for a "
                                          "record of several starts (`show` fills it)")


def show_record(home: Home, prefix: str) -> ShownRecord:
    """One record, read from the ledger alone, with whether a trusted key signed it, what
    is wrong with its artifacts in the store, and its verifications."""
    rid, check, data = checked_statement(home, prefix)
    statement = parse_statement(data)
    problems = artifact_problems(home, statement)
    return ShownRecord(id=rid, ledger_commit=_adding_commit(home, rid), check=check,
                       statement=statement, artifacts=tuple(p for _, p in problems),
                       artifacts_changed=any(changed for changed, _ in problems),
                       verifications=verifications_of(home, rid))


def _adding_commit(home: Home, rid: str) -> str | None:
    """The ledger commit that added the record: the index's word for it when the ledger
    confirms it (one git call), else found by walking the ledger's history (every
    commit: seconds on a ledger of 10,000 records). Shown, never trusted: `verify`
    checks each record's commit against the signed history."""
    from registry.errors import RegistryError

    try:
        hint = readable_index(home).commit_of(rid)
    except RegistryError:
        hint = None
    if hint is not None and any(_adds(home, hint, path) for path in statement_paths(rid)):
        return hint
    return adding_commit(home.ledger, rid)


def _adds(home: Home, commit: str, path: str) -> bool:
    """`commit` holds `path` with the bytes the branch holds, and its parent does not."""
    from registry.store.git import run_git
    from registry.store.ledger import BRANCH

    if not is_git_sha(commit):
        return False
    asked = f"{commit}:{path}\n{commit}^:{path}\n{BRANCH}:{path}\n"
    here, before, head = run_git(home.ledger, "cat-file", "--batch-check",
                                 input=asked.encode()).decode().splitlines()
    return before.endswith("missing") and not here.endswith("missing") and \
        here.split()[0] == head.split()[0]


def artifact_problems(home: Home, statement: Statement) -> list[tuple[bool, str]]:
    """(changed, what) for each signed artifact missing from the store, or whose bytes no
    longer hash to the digest the record signed (hashes are cached: a second look
    costs a stat)."""
    from registry.store.objects import ObjectState, ObjectStore

    store = ObjectStore(home.objects)
    out = []
    for subject in statement.subject:
        state = store.state(subject.sha256)
        if state is ObjectState.missing:
            out.append((False, f"artifact {subject.name}: object {short_id(subject.sha256)} is "
                               "missing from the store"))
        elif state is ObjectState.corrupt:
            out.append((True, f"artifact {subject.name}: stored bytes no longer hash to "
                              f"{short_id(subject.sha256)}"))
    return out
