"""`registry pull` and `registry push`: share a ledger and its objects through a remote,
checking everything that comes in before the ledger moves.

Pull, holding the home lock: the remote's branch is fetched into a quarantine ref
(`refs/registry/incoming`), never onto the branch. Then, against this home's root of
trust: the incoming keyring versions verify from the pin; the incoming history is
signed, linear, append-only and descends from the remote head this home last
verified; every record it adds is signed by a key that could sign records when it was
added; the objects of those records arrive, each hashed against its name. Only then
does the branch move, by compare-and-swap. Anything wrong refuses the whole pull with
a report, and nothing is applied.

Local commits the remote lacks (records sealed here since the last push) are replayed
on top of the verified remote head: same files, a new commit signed by this home's key
(the records' own envelopes are unchanged), so history stays a line and no record is
lost. A keyring version made on both sides is refused: it must be redone on top.

Push: pull first when the remote moved, send the objects the remote lacks, then a
plain (never forced) `git push`. When another member pushed in between, the remote
refuses the update; the push fetches, verifies, replays and tries again.
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import Field

from registry.base.files import write_bytes
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.errors import Refused, RegistryError, Unverifiable, VerificationFailed
from registry.formats.record import parse_statement
from registry.signing.commits import parse_commit
from registry.signing.keyring import Chain, Role, verify_chain
from registry.signing.keys import Signer
from registry.signing.signed import SignatureCheck, check_signed
from registry.store.git import git_args, git_env, read_objects, run_git
from registry.store.history import History, check_history
from registry.store.home import Home
from registry.store.index import entry_rows, open_index
from registry.store.ledger import BRANCH, ENVELOPE, RECORDS, STATEMENT, Ledger
from registry.store.lock import exclusive
from registry.store.objects import ObjectStore
from registry.store.trust import TrustState, advance, keyring_files, load_state, save_state
from registry.team.remotes import LEDGER, OBJECTS, Remote
from registry.team.transfer import TransferReport, object_remote

QUARANTINE = "refs/registry/incoming"
PROTOCOLS = ("-c", "protocol.allow=never", "-c", "protocol.ssh.allow=always",
             "-c", "protocol.file.allow=always")
ATTEMPTS = 5


class SyncReport(Frozen):
    remote: str
    before: str | None
    after: str | None
    received: list[str] = Field(default_factory=list, description="records new from the remote")
    replayed: list[str] = Field(default_factory=list,
                                description="local records re-committed on the remote's head")
    sent: list[str] = Field(default_factory=list, description="records the remote got (push)")
    objects_in: TransferReport = Field(default_factory=TransferReport)
    objects_out: TransferReport = Field(default_factory=TransferReport)


class PullRefused(VerificationFailed):
    """The remote's ledger does not verify: nothing of it was applied."""

    def __init__(self, remote: str, problems: list[str]) -> None:
        shown = "\n  ".join(problems[:20])
        more = f"\n  (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        super().__init__(f"refused: remote {remote!r} does not verify; nothing was applied:\n"
                         f"  {shown}{more}",
                         hint="the remote was rewritten or tampered with: tell its owner; "
                              "your ledger is unchanged")
        self.problems = problems


def pull(home: Home, remote: Remote, signer: Signer | None = None) -> SyncReport:
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        before = ledger.head()
        incoming = fetch(ledger, remote)
        return _integrate(home, ledger, remote, incoming, before, signer)


def push(home: Home, remote: Remote, signer: Signer | None = None) -> SyncReport:
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        before = ledger.head()
        for _ in range(ATTEMPTS):
            incoming = fetch(ledger, remote)
            report = _integrate(home, ledger, remote, incoming, before, signer)
            head = ledger.head()
            if head is None or head == incoming:
                return report
            sent = sorted(set(ledger.record_ids()) - set(_ids_at(ledger, incoming)))
            objects = _send_objects(home, ledger, remote, sent)
            if _git_push(ledger, remote, head):
                _remember(home, remote, head)
                return report.model_copy(update={"sent": sent, "objects_out": objects})
        raise Unverifiable(f"remote {remote.name!r} kept moving: {ATTEMPTS} pushes refused",
                           hint="others are pushing right now: run registry push again")


def fetch(ledger: Ledger, remote: Remote) -> str | None:
    """The remote's head, fetched into the quarantine ref; None for an empty remote."""
    run_git(ledger.path, "update-ref", "-d", QUARANTINE)
    done = _git(ledger, remote, "fetch", "-q", "--no-tags", "--no-write-fetch-head",
                remote.location.ledger_url(), f"+{BRANCH}:{QUARANTINE}")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace")
        if "couldn't find remote ref" in why:
            return None
        raise Unverifiable(f"remote {remote.name!r}: git fetch failed ({_last(why)})",
                           hint="check the URL and --ssh-command: registry remote list")
    return run_git(ledger.path, "rev-parse", "--verify", QUARANTINE).decode().strip()


def _git(ledger: Ledger, remote: Remote, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = git_env({"GIT_SSH_COMMAND": remote.ssh_command})
    return subprocess.run(git_args(ledger.path, *PROTOCOLS, *args), capture_output=True, env=env)


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _git_push(ledger: Ledger, remote: Remote, head: str) -> bool:
    """Push `head` as the remote's branch, never forced; False when the remote moved."""
    done = _git(ledger, remote, "push", "-q", "--no-verify", remote.location.ledger_url(),
                f"{head}:{BRANCH}")
    if done.returncode == 0:
        return True
    why = done.stderr.decode(errors="replace")
    if "rejected" in why or "fetch first" in why or "non-fast-forward" in why:
        return False
    raise Unverifiable(f"remote {remote.name!r}: git push failed ({_last(why)})",
                       hint="check the URL and --ssh-command: registry remote list")


def _is_ancestor(ledger: Ledger, a: str, b: str) -> bool:
    done = subprocess.run(git_args(ledger.path, "merge-base", "--is-ancestor", a, b),
                          capture_output=True, env=git_env())
    return done.returncode == 0


def _ids_at(ledger: Ledger, ref: str | None) -> list[str]:
    return ledger.record_ids(ref) if ref else []


def _remember(home: Home, remote: Remote, head: str) -> None:
    state = load_state(home)
    save_state(home, state.model_copy(update={"remotes": {**state.remotes, remote.name: head}}))


def _integrate(home: Home, ledger: Ledger, remote: Remote, incoming: str | None,
               before: str | None, signer: Signer | None) -> SyncReport:
    """Verify the remote's head and make the local branch contain it (replaying local
    commits on top); a no-op when the local branch already contains it."""
    report = SyncReport(remote=remote.name, before=before, after=ledger.head())
    local = ledger.head()
    _no_rollback(home, ledger, remote, incoming)
    if incoming is None or incoming == local or (local and _is_ancestor(ledger, incoming, local)):
        if incoming is not None:
            _remember(home, remote, incoming)
        return report
    state = load_state(home)
    chain, history = _verified(ledger, remote, state, incoming)
    base = _fork_point(ledger, remote, local, incoming)
    ours = set(_ids_at(ledger, local))
    new = sorted(set(history.added) - ours)
    files = _record_files(ledger, incoming, new)
    problems = [f"record {rid[:16]}: {check.detail or check.trust.value}"
                for rid in new if not (check := _check(chain, history, rid, files)).ok]
    if problems:
        raise PullRefused(remote.name, problems)
    objects = _fetch_objects(home, remote, [files[rid][0] for rid in new])
    replayed: list[str] = []
    head = incoming
    if local is not None and base != local:
        head, replayed = _replay(ledger, incoming, _commits(ledger, base, local),
                                 signer or _signer(home))
        chain, history = _verified(ledger, remote, state, head)
        lost = ours - set(history.added)
        if lost:  # a replay keeps every record: anything else is a bug, not applied
            raise PullRefused(remote.name, [f"record {r[:16]} would be lost" for r in lost])
    run_git(ledger.path, "update-ref", BRANCH, head, local or "0" * 40)
    _checkout(ledger, local, head)
    _index(home, ledger, chain, history, [*new, *replayed])
    new_state = advance(home, state, chain, head=head)
    save_state(home, new_state.model_copy(update={"remotes": {**new_state.remotes,
                                                              remote.name: incoming}}))
    return report.model_copy(update={"after": head, "received": new, "replayed": replayed,
                                     "objects_in": objects})


def _no_rollback(home: Home, ledger: Ledger, remote: Remote, incoming: str | None) -> None:
    """The remote's head must descend from the one this home last verified there: a
    remote that went back or was rewritten lost records."""
    seen = load_state(home).remotes.get(remote.name)
    if seen is None or seen == incoming:
        return
    if incoming is None or not _is_ancestor(ledger, seen, incoming):
        now = incoming[:12] if incoming else "no branch at all"
        raise PullRefused(remote.name, [
            f"history was rewritten: the remote's head is {now}, which does not descend from "
            f"{seen[:12]}, the remote head this home last verified (commits were removed)"])


def _verified(ledger: Ledger, remote: Remote, state: TrustState,
              ref: str) -> tuple[Chain, History]:
    """The keyring and history at `ref`, refused unless both verify from this home's pin
    and the remote's last verified head."""
    try:
        chain = verify_chain(keyring_files(ledger, ref), state.pin)
    except RegistryError as e:
        raise PullRefused(remote.name, [f"keyring: {e.message}"]) from None
    history = check_history(ledger, chain, state.remotes.get(remote.name), ref=ref)
    if history.problems:
        raise PullRefused(remote.name, [p.detail for p in history.problems])
    return chain, history


def _fork_point(ledger: Ledger, remote: Remote, local: str | None, incoming: str) -> str | None:
    if local is None:
        return None
    done = subprocess.run(git_args(ledger.path, "merge-base", local, incoming),
                          capture_output=True, env=git_env())
    if done.returncode != 0:
        raise PullRefused(remote.name, [
            "this home's ledger and the remote's share no history (this home started a "
            "keyring of its own): a home that joins a team is made with `registry init "
            "--pin ROOTKEYID` and pulls before it seals"])
    return done.stdout.decode().strip()


RecordFiles = tuple[list[str], bytes | None, bytes | None]  # (digests, statement, envelope)


def _record_files(ledger: Ledger, ref: str, ids: list[str]) -> dict[str, RecordFiles]:
    tree = ledger.tree_files(RECORDS, ref)
    paths = {(rid, name): tree.get(f"{RECORDS}/{rid}/{name}") for rid in ids
             for name in (STATEMENT, ENVELOPE)}
    blobs = ledger.blobs([sha for sha in paths.values() if sha])
    out: dict[str, RecordFiles] = {}
    for rid in ids:
        statement, envelope = (blobs.get(paths[(rid, n)] or "") for n in (STATEMENT, ENVELOPE))
        out[rid] = (_digests(statement), statement, envelope)
    return out


def _digests(statement: bytes | None) -> list[str]:
    try:
        return [s["digest"]["sha256"] for s in loads_json(statement or b"")["subject"]]
    except (ValueError, KeyError, TypeError, RegistryError):
        return []


def _check(chain: Chain, history: History, rid: str,
           files: dict[str, RecordFiles]) -> SignatureCheck:
    _, statement, envelope = files[rid]
    ring = chain.versions.get(history.keyring_at.get(rid) or 0)
    return check_signed(statement, envelope, expected_id=rid, keyring=chain.current,
                        keys=ring.with_role(Role.signer) if ring else {})


def _fetch_objects(home: Home, remote: Remote, digests: Iterable[list[str]]) -> TransferReport:
    store = ObjectStore(home.objects)
    wanted = sorted({d for ds in digests for d in ds if not store.path(d).is_file()})
    if not wanted:
        return TransferReport()
    report = object_remote(remote).fetch(store, wanted)
    if report.missing or report.corrupt:
        bad = [*(f"object {d[:16]} is missing from the remote" for d in report.missing),
               *(f"object {d[:16]} arrived with other bytes" for d in report.corrupt)]
        raise Unverifiable(f"remote {remote.name!r}: pull not applied:\n  " + "\n  ".join(bad[:20]),
                           hint="the pusher's objects did not all arrive: ask them to push "
                                "again; the objects that did arrive are kept")
    return report


def _send_objects(home: Home, ledger: Ledger, remote: Remote, ids: list[str]) -> TransferReport:
    files = _record_files(ledger, BRANCH, ids)
    wanted = {d for digests, _, _ in files.values() for d in digests}
    if not wanted:
        return TransferReport()
    target = object_remote(remote)
    missing = sorted(wanted - target.present())
    report = target.send(ObjectStore(home.objects), missing) if missing else TransferReport()
    if report.missing or report.corrupt:
        raise Unverifiable(f"remote {remote.name!r}: {len(report.missing)} object(s) missing "
                           f"here, {len(report.corrupt)} arrived damaged; the ledger was not "
                           "pushed", hint="registry verify --all names what is wrong here")
    return report


def _commits(ledger: Ledger, base: str | None, head: str) -> list[str]:
    span = f"{base}..{head}" if base else head
    return run_git(ledger.path, "rev-list", "--reverse", span).decode().split()


def _signer(home: Home) -> Signer:
    from registry.store.writer import ready_signer

    return ready_signer(home)


def _replay(ledger: Ledger, base: str, commits: list[str],
            signer: Signer) -> tuple[str, list[str]]:
    """Each commit's files re-committed on top of `base`, signed by `signer`; returns
    the new head and the records it re-committed."""
    messages = {sha: parse_commit(sha, raw).message for sha, (kind, raw)
                in read_objects(ledger.path, commits).items() if kind == "commit"}
    changes = _raw_changes(ledger, commits)
    replayed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="registry-replay-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        for sha in commits:
            present = ledger.tree_files("", base)
            files = {path: blob for path, blob in changes.get(sha, {}).items()
                     if present.get(path) != blob}
            for path in files:
                if path.startswith("keyring/") and path in present:
                    raise Refused(
                        f"the remote and this home both made {path}: the keyring change "
                        "made here cannot be replayed", hint="pull, then make the keyring "
                        "change again (registry keys ...)")
            mine = {p: b for p, b in files.items()
                    if not (p.startswith(f"{RECORDS}/") and p in present)}  # theirs kept
            if not mine:
                continue
            run_git(ledger.path, "read-tree", base, env=env)
            entries = "".join(f"100644 {blob}\t{path}\n" for path, blob in mine.items())
            run_git(ledger.path, "update-index", "--index-info", input=entries.encode(), env=env)
            tree = run_git(ledger.path, "write-tree", env=env).decode().strip()
            base = ledger.signed_commit(tree, [base], messages[sha], signer)
            replayed += sorted({p.split("/")[1] for p in mine
                                if p.startswith(f"{RECORDS}/") and p.endswith(STATEMENT)})
    return base, replayed


def _raw_changes(ledger: Ledger, commits: list[str]) -> dict[str, dict[str, str]]:
    """commit -> {path: new blob} of every file it added or changed."""
    out = run_git(ledger.path, "diff-tree", "--stdin", "-r", "-z", "--root", "--no-renames",
                  input="".join(f"{c}\n" for c in commits).encode())
    found: dict[str, dict[str, str]] = {}
    tokens = out.split(b"\0")
    current: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i].decode(errors="replace")
        if token.startswith(":") and i + 1 < len(tokens):
            meta = token.split()
            if meta[4] in ("A", "M"):
                current[tokens[i + 1].decode("utf-8", "surrogateescape")] = meta[3]
            i += 2
        else:
            if len(token) == 40:
                current = found.setdefault(token, {})
            i += 1
    return found


def _checkout(ledger: Ledger, old: str | None, new: str) -> None:
    """The working tree and index to `new`: files written from their blobs (no
    checkout, so no filter or attribute of the repository runs)."""
    args = ["diff-tree", "-r", "-z", "--no-renames", old, new] if old else \
        ["ls-tree", "-r", "-z", new]
    out = run_git(ledger.path, *args)
    wanted: dict[str, str] = {}
    tokens = out.split(b"\0")
    if old:
        for meta, path in zip(tokens[0::2], tokens[1::2], strict=False):
            parts = meta.decode().split()
            if len(parts) == 5 and parts[4] in ("A", "M"):
                wanted[path.decode("utf-8", "surrogateescape")] = parts[3]
    else:
        for entry in filter(None, tokens):
            meta, _, path = entry.partition(b"\t")
            wanted[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    blobs = ledger.blobs(list(wanted.values()))
    for name, blob in wanted.items():
        (ledger.path / name).parent.mkdir(parents=True, exist_ok=True)
        write_bytes(ledger.path / name, blobs[blob])
    run_git(ledger.path, "read-tree", BRANCH)


def _index(home: Home, ledger: Ledger, chain: Chain, history: History, ids: list[str]) -> None:
    """Index rows for the records the pull brought or re-committed."""
    from registry.store.teachers import index_bindings

    if not ids:
        return
    index = open_index(home)
    index.create()
    files = _record_files(ledger, BRANCH, ids)
    entries = []
    for rid in ids:
        check = _check(chain, history, rid, files)
        statement = files[rid][1]
        if check.ok and statement is not None:
            rows = entry_rows(rid, parse_statement(statement), check.signer)
            rows["records"][0]["ledger_commit"] = history.added[rid]
            entries.append(rows)
    index.put(entries)
    index_bindings(home)


def create_remote(remote: Remote) -> None:
    """An empty remote: a bare repository that refuses forced and deleting updates, and
    an object folder."""
    loc = remote.location
    ledger, objects = loc.ledger_url(), loc.objects_path()
    if not loc.is_ssh:
        Path(objects, "sha256").mkdir(parents=True, exist_ok=True)
        Path(objects, "tmp").mkdir(exist_ok=True)
        target = Path(ledger)
        if not (target / "HEAD").exists():
            target.mkdir(parents=True, exist_ok=True)
            _init_bare(lambda *a: run_git(target, *a))
        return
    path = shlex.quote(loc.path)
    script = (f"set -e; mkdir -p {path}/{OBJECTS}/sha256 {path}/{OBJECTS}/tmp; "
              f"cd {path}; test -f {LEDGER}/HEAD || {{ git init -q --bare {LEDGER}; cd {LEDGER}; "
              + "; ".join([*(f"git config {k} {v}" for k, v in BARE_CONFIG), BARE_HEAD]) + "; }")
    argv = [*shlex.split(remote.ssh_command),
            *(["-p", str(loc.port)] if loc.port else []), loc.destination, script]
    done = subprocess.run(argv, capture_output=True)
    if done.returncode != 0:
        raise Unverifiable(f"remote {remote.name!r}: could not create it "
                           f"({_last(done.stderr.decode(errors='replace'))})")


BARE_CONFIG = (("receive.denyNonFastForwards", "true"), ("receive.denyDeletes", "true"),
               ("core.logAllRefUpdates", "true"))
BARE_HEAD = f"git symbolic-ref HEAD {BRANCH}"


def _init_bare(git: Callable[..., bytes]) -> None:
    git("init", "-q", "--bare", ".")
    for key, value in BARE_CONFIG:
        git("config", key, value)
    git("symbolic-ref", "HEAD", BRANCH)
