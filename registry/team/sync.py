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

import random
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import Field

from registry.base.canonical import sha256_hex
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.errors import RegistryError, Unverifiable
from registry.formats.display import short_id
from registry.signing.commits import parse_commit
from registry.signing.failures import KeyringConflict, Malformed, RolledBack, Unrelated
from registry.signing.keyring import (
    VERSION_FILE,
    Chain,
    Keyring,
    Pin,
    compose,
    file_name,
    sign_version,
    verify_chain,
)
from registry.signing.keys import Signer
from registry.store import journal
from registry.store.git import (
    MEMORY_CONFIG,
    MEMORY_ENV,
    REMOTE_RECEIVE_PACK,
    REMOTE_UPLOAD_PACK,
    out_of_memory,
    read_objects,
    remote_heap,
    run_git,
    try_git,
)
from registry.store.history import MAX_BYTES, oversized, read_commits
from registry.store.home import Home
from registry.store.index import entry_rows, open_index
from registry.store.ledger import BRANCH, ENVELOPE, RECORDS, STATEMENT, Ledger, record_of
from registry.store.objects import ObjectStore
from registry.store.transaction import transaction
from registry.store.trust import TrustState, advance, keyring_files, load_state, save_state
from registry.team.incoming import PullRefused, RecordBytes, Trusted, verify_incoming
from registry.team.remotes import LEDGER, OBJECTS, Remote
from registry.team.transfer import TIMEOUT_ENV, TransferReport, object_remote, remote_timeout

QUARANTINE = "refs/registry/incoming"
CRASH_POINTS = ("pull-fetched", "pull-objects", "pull-replayed", "pull-journal", "pull-branch",
                "pull-tree", "pull-index", "pull-state", "push-objects", "push-sent")
"""Every write point of pull and push, in order (REGISTRY_TEST_CRASH_AT=POINT exits
there: tests/test_team_crash.py kills each in turn)."""
PROTOCOLS = ("-c", "protocol.allow=never", "-c", "protocol.ssh.allow=always",
             "-c", "protocol.file.allow=always")
BOUNDED = tuple(x for pair in MEMORY_CONFIG for x in ("-c", pair))
ATTEMPTS = 10
BACKOFF_S = (0.05, 4.0)
"""A refused push waits before trying again: up to the first figure, doubled after each
refusal, never over the second; a random part of that ("full jitter"), so that workers
refused together do not come back together (with five tries and no wait, four workers
pushing to one remote lost 6 of about 2,000 pushes: docs/fleet.md)."""


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
    keyring: list[str] = Field(default_factory=list,
                               description="keyring versions made here, made again on top")
    untrusted: dict[str, str] = Field(default_factory=dict,
                                      description="records pulled but not trusted: why")
    pushed: list[str] = Field(default_factory=list, description="push: the subject of each "
                              "commit the remote got (records, keyring versions, claims)")
    remote_before: str | None = Field(None, description="push: the remote's head before")


def pull(home: Home, remote: Remote, signer: Signer | None = None) -> SyncReport:
    with transaction(home) as ledger, _discarding(ledger):
        before = ledger.head()
        incoming = fetch(ledger, remote)
        return _integrate(home, ledger, remote, incoming, before, signer)


def push(home: Home, remote: Remote, signer: Signer | None = None) -> SyncReport:
    with transaction(home) as ledger, _discarding(ledger):
        before = ledger.head()
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, min(BACKOFF_S[1], BACKOFF_S[0] * 2 ** attempt)))
            incoming = fetch(ledger, remote)
            report = _integrate(home, ledger, remote, incoming, before, signer)
            head = ledger.head()
            if head is None or head == incoming:
                return report.model_copy(update={"remote_before": incoming})
            sent = sorted(set(ledger.record_ids()) - set(_ids_at(ledger, incoming)))
            commits = run_git(ledger.path, "log", "--format=%s", "--reverse",
                              f"{incoming}..{head}" if incoming else head)
            objects = _send_objects(home, ledger, remote, sent)
            crash_point("push-objects")
            if _git_push(ledger, remote, head):
                crash_point("push-sent")
                _remember(home, remote, head)
                return report.model_copy(update={
                    "sent": sent, "objects_out": objects, "remote_before": incoming,
                    "pushed": commits.decode(errors="replace").splitlines()})
        raise Unverifiable(f"remote {remote.name!r} kept moving: {ATTEMPTS} pushes refused",
                           hint="others are pushing right now: run registry push again")


@contextmanager
def _discarding(ledger: Ledger) -> Iterator[None]:
    """On a refusal, what the refused fetch (and any replay) wrote into the ledger's
    git folder is removed: the quarantine ref, the packs it received and every loose
    object nothing reachable names. Nothing a refused remote sent stays."""
    packs = _packs(ledger)
    try:
        yield
    except RegistryError:
        try_git(ledger.path, "update-ref", "-d", QUARANTINE)
        for path in _packs(ledger) - packs:
            for suffix in (".pack", ".idx", ".rev", ".keep", ".promisor", ".bitmap"):
                path.with_suffix(suffix).unlink(missing_ok=True)
        try_git(ledger.path, "prune", "--expire=now")
        raise


def _packs(ledger: Ledger) -> set[Path]:
    return set((ledger.path / ".git" / "objects" / "pack").glob("*.pack"))


def fetch(ledger: Ledger, remote: Remote) -> str | None:
    """The remote's head, fetched into the quarantine ref; None for an empty remote."""
    run_git(ledger.path, "update-ref", "-d", QUARANTINE)
    done = _git(ledger, remote, "fetch", "-q", "--no-tags", "--no-write-fetch-head",
                f"--upload-pack={REMOTE_UPLOAD_PACK}", remote.location.ledger_url(),
                f"+{BRANCH}:{QUARANTINE}")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace")
        if "couldn't find remote ref" in why:
            return None
        raise Unverifiable(f"remote {remote.name!r}: git fetch failed ({_last(why)})",
                           hint="check the URL and --ssh-command: registry remote list")
    crash_point("pull-fetched")
    return run_git(ledger.path, "rev-parse", "--verify", QUARANTINE).decode().strip()


def _git(ledger: Ledger, remote: Remote, *args: str) -> subprocess.CompletedProcess[bytes]:
    """A git fetch or push to the remote, within the remote timeout (the caller holds
    the home lock: a remote that never answers must not keep it)."""
    heap = remote_heap(ledger.path)
    try:
        done = try_git(ledger.path, *PROTOCOLS, *BOUNDED, *args, timeout=remote_timeout(),
                       env={"GIT_SSH_COMMAND": remote.ssh_command}, heap=heap)
    except subprocess.TimeoutExpired:
        raise Unverifiable(f"remote {remote.name!r}: git {args[0]} timed out after "
                           f"{remote_timeout():.0f} s", hint=f"{TIMEOUT_ENV} sets the limit; "
                           "nothing was applied") from None
    if done.returncode != 0 and out_of_memory(done.stderr.decode(errors="replace")):
        raise Unverifiable(
            f"refused: remote {remote.name!r}: git {args[0]} needed more than "
            f"{heap >> 20} MiB: the remote holds an object far over a ledger's caps "
            f"(a commit is at most {MAX_BYTES['commit'] >> 20} MiB, a tree "
            f"{MAX_BYTES['tree'] >> 20} MiB), or far more objects than this ledger",
            hint=f"nothing was applied; a first pull of a very large ledger: set "
                 f"{MEMORY_ENV}=MiB (e.g. 512); else the remote was tampered with: tell "
                 "its owner")
    return done


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _git_push(ledger: Ledger, remote: Remote, head: str) -> bool:
    """Push `head` as the remote's branch, never forced; False when the remote moved."""
    done = _git(ledger, remote, "push", "-q", "--no-verify",
                f"--receive-pack={REMOTE_RECEIVE_PACK}", remote.location.ledger_url(),
                f"{head}:{BRANCH}")
    if done.returncode == 0:
        return True
    why = done.stderr.decode(errors="replace")
    if "rejected" in why or "fetch first" in why or "non-fast-forward" in why:
        return False
    raise Unverifiable(f"remote {remote.name!r}: git push failed ({_last(why)})",
                       hint="check the URL and --ssh-command: registry remote list")


def _is_ancestor(ledger: Ledger, a: str, b: str) -> bool:
    return try_git(ledger.path, "merge-base", "--is-ancestor", a, b).returncode == 0


def _ids_at(ledger: Ledger, ref: str | None) -> list[str]:
    return ledger.record_ids(ref) if ref else []


def _remember(home: Home, remote: Remote, head: str) -> None:
    state = load_state(home)
    save_state(home, state.model_copy(update={"remotes": {**state.remotes, remote.name: head}}))


def _integrate(home: Home, ledger: Ledger, remote: Remote, incoming: str | None,
               before: str | None, signer: Signer | None) -> SyncReport:
    """Verify the remote's head and make the local branch contain it (replaying local
    commits on top); a no-op when the local branch already contains it. Everything is
    verified and parsed (registry.team.incoming) before the branch moves."""
    report = SyncReport(remote=remote.name, before=before, after=ledger.head())
    local = ledger.head()
    _no_rollback(home, ledger, remote, incoming)
    if incoming is None or incoming == local or (local and _is_ancestor(ledger, incoming, local)):
        if incoming is not None:
            _remember(home, remote, incoming)
        return report
    too_big = oversized(ledger, incoming, local)
    if too_big:
        raise PullRefused(remote.name, [p.failure() for p in too_big])
    state = load_state(home)
    pin = _pin_for(ledger, state, incoming)
    ours = set(_ids_at(ledger, local))
    trusted = _trusted(ledger, remote, pin, state, incoming, lambda ids: sorted(set(ids) - ours))
    new, untrusted = sorted(trusted.records), trusted.untrusted
    objects = _fetch_objects(home, remote, [r.digests for r in trusted.records.values()])
    crash_point("pull-objects")
    replay: Replay | None = None
    base = _fork_point(ledger, remote, local, incoming)
    if local is not None and base != local:  # only a replay signs: a reader needs no key
        replay = Replay(ledger=ledger, pin=pin, signer=signer or _signer(home),
                        local=_local_chain(ledger, state))
        head = replay.run(incoming, _commits(ledger, base, local))
        crash_point("pull-replayed")
        applying = {*new, *replay.records}
        trusted = _trusted(ledger, remote, pin, state, head, lambda ids: sorted(applying))
        lost = ours - set(trusted.history.added)
        if lost:  # a replay keeps every record: anything else is a bug, not applied
            raise PullRefused(remote.name, [Malformed(f"record {short_id(r)} would be lost")
                                            for r in sorted(lost)])
    _apply(home, ledger, remote, trusted, state, local, incoming)
    return report.model_copy(update={
        "after": trusted.head, "received": [r for r in new if r in trusted.records],
        "replayed": replay.records if replay else [], "objects_in": objects,
        "keyring": replay.keyring if replay else [],
        "untrusted": {**untrusted, **trusted.untrusted}})


def _pin_for(ledger: Ledger, state: TrustState, ref: str) -> Pin:
    """The pin a remote's keyring is verified from: this home's; or, when the remote
    lacks versions this home made since it last pushed there (to be replayed on top
    of the remote's), this home's own verified version where the two last agree. A
    remote whose keyring went back is still caught: its history would not descend
    from the head this home last verified there."""
    theirs = {v: sha256_hex(data) for v, data in keyring_files(ledger, ref).items()}
    local = _local_chain(ledger, state)
    if local is None or theirs.get(state.pin.version) == state.pin.sha256:
        return state.pin
    shared = 0
    while shared + 1 in theirs and theirs[shared + 1] == local.digests.get(shared + 1):
        shared += 1
    ring = local.versions.get(shared)
    if ring is None:
        return state.pin
    return Pin(roots=sorted(ring.roots), threshold=ring.threshold, version=shared,
               sha256=local.digests[shared])


def _local_chain(ledger: Ledger, state: TrustState) -> Chain | None:
    if ledger.head() is None:
        return None
    return verify_chain(keyring_files(ledger), state.pin)


def _apply(home: Home, ledger: Ledger, remote: Remote, trusted: Trusted, state: TrustState,
           local: str | None, incoming: str) -> None:
    """Move the branch to a verified head, then the working tree, the index and
    trust.json; a journal written first lets the next command finish it if this
    process dies anywhere in between (registry/store/journal.py)."""
    journal.begin(ledger, journal.Journal(before=local, after=trusted.head, remote=remote.name,
                                          remote_head=incoming))
    crash_point("pull-journal")
    run_git(ledger.path, "update-ref", BRANCH, trusted.head, local or "0" * 40)
    crash_point("pull-branch")
    ledger.materialize(local, trusted.head)
    crash_point("pull-tree")
    _index(home, trusted)
    crash_point("pull-index")
    new_state = advance(home, state, trusted.chain, head=trusted.head)
    save_state(home, new_state.model_copy(update={"remotes": {**new_state.remotes,
                                                              remote.name: incoming}}))
    crash_point("pull-state")
    journal.end(ledger)


def _no_rollback(home: Home, ledger: Ledger, remote: Remote, incoming: str | None) -> None:
    """The remote's head must descend from the one this home last verified there: a
    remote that went back or was rewritten lost records."""
    seen = load_state(home).remotes.get(remote.name)
    if seen is None or seen == incoming:
        return
    if incoming is None or not _is_ancestor(ledger, seen, incoming):
        now = short_id(incoming) if incoming else "no branch at all"
        raise PullRefused(remote.name, [RolledBack(
            f"history was rewritten: the remote's head is {now}, which does not descend from "
            f"{short_id(seen)}, the remote head this home last verified (commits were removed)")])


def _trusted(ledger: Ledger, remote: Remote, pin: Pin, state: TrustState, ref: str,
             wanted: Callable[[list[str]], list[str]]) -> Trusted:
    """Read what `ref` holds (keyring versions, commits, the bytes of the records
    `wanted` picks from its tree) and hand it to the pure check."""
    ids = wanted(ledger.record_ids(ref))
    return verify_incoming(remote.name, pin, state.remotes.get(remote.name),
                           keyring_files(ledger, ref), read_commits(ledger, ref),
                           _record_bytes(ledger, ref, ids))


def _fork_point(ledger: Ledger, remote: Remote, local: str | None, incoming: str) -> str | None:
    if local is None:
        return None
    done = try_git(ledger.path, "merge-base", local, incoming)
    if done.returncode != 0:
        raise PullRefused(remote.name, [Unrelated(
            "this home's ledger and the remote's share no history (this home started a "
            "keyring of its own): a home that joins a team is made with `registry init "
            "--pin ROOTKEYID` and pulls before it seals")])
    return done.stdout.decode().strip()


def _record_bytes(ledger: Ledger, ref: str, ids: list[str]) -> dict[str, RecordBytes]:
    """rid -> (statement, envelope) bytes at `ref`, in one `git cat-file --batch`."""
    tree = ledger.records(ref)
    paths = {(rid, name): tree[rid].blobs.get(name) if rid in tree else None for rid in ids
             for name in (STATEMENT, ENVELOPE)}
    blobs = ledger.blobs([sha for sha in paths.values() if sha])
    return {rid: (blobs.get(paths[(rid, STATEMENT)] or ""),
                  blobs.get(paths[(rid, ENVELOPE)] or "")) for rid in ids}


def _fetch_objects(home: Home, remote: Remote, digests: Iterable[list[str]]) -> TransferReport:
    store = ObjectStore(home.objects)
    wanted = sorted({d for ds in digests for d in ds if not store.path(d).is_file()})
    if not wanted:
        return TransferReport()
    report = object_remote(remote).fetch(store, wanted)
    if report.missing or report.corrupt or report.refused:
        bad = [*(f"object {short_id(d)} is missing from the remote" for d in report.missing),
               *(f"object {short_id(d)} arrived with other bytes" for d in report.corrupt),
               *(f"object {short_id(d)} refused: {why}" for d, why in report.refused.items())]
        raise Unverifiable(f"remote {remote.name!r}: pull not applied:\n  " + "\n  ".join(bad[:20]),
                           hint="the pusher's objects did not all arrive: ask them to push "
                                "again; the objects that did arrive are kept")
    return report


def _send_objects(home: Home, ledger: Ledger, remote: Remote, ids: list[str]) -> TransferReport:
    wanted = {d for statement, _ in _record_bytes(ledger, BRANCH, ids).values()
              for d in _digests(statement)}
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


def _digests(statement: bytes | None) -> list[str]:
    """The artifact digests of one of this home's own statements (read, not modelled:
    a push of thousands of records reads each once)."""
    try:
        return [s["digest"]["sha256"] for s in loads_json(statement or b"")["subject"]]
    except (ValueError, KeyError, TypeError):
        return []


def _commits(ledger: Ledger, base: str | None, head: str) -> list[str]:
    span = f"{base}..{head}" if base else head
    return run_git(ledger.path, "rev-list", "--reverse", span).decode().split()


def crash_point(step: str) -> None:
    from registry.store.writer import crash_point as exit_at

    exit_at(step)


def _signer(home: Home) -> Signer:
    from registry.store.writer import ready_signer

    return ready_signer(home)


class Replay:
    """Local commits the remote lacks, re-committed on top of its head: the same
    files in a new commit signed by this home's key (the records' own envelopes are
    unchanged). A keyring version made here is made again on top of the remote's
    newest (the same change, re-signed by the local root keys) when the remote made
    one too."""

    def __init__(self, ledger: Ledger, pin: Pin, signer: Signer, local: Chain | None) -> None:
        self.ledger, self.pin, self.signer, self.local = ledger, pin, signer, local
        self.records: list[str] = []
        self.keyring: list[str] = []

    def run(self, base: str, commits: list[str]) -> str:
        """The new head, every commit replayed on `base`."""
        messages = {sha: parse_commit(sha, raw).message for sha, (kind, raw)
                    in read_objects(self.ledger.path, commits).items() if kind == "commit"}
        changes = _raw_changes(self.ledger, commits)
        with tempfile.TemporaryDirectory(prefix="registry-replay-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            for sha in commits:
                present = self.ledger.tree_files("", base)
                files = {path: blob for path, blob in changes.get(sha, {}).items()
                         if present.get(path) != blob
                         and not (path.startswith(f"{RECORDS}/") and path in present)}
                if not files:  # theirs kept
                    continue
                files, message = self._keyring(base, present, files, messages[sha])
                run_git(self.ledger.path, "read-tree", base, env=env)
                entries = "".join(f"100644 {blob}\t{path}\n" for path, blob in files.items())
                run_git(self.ledger.path, "update-index", "--index-info",
                        input=entries.encode(), env=env)
                tree = run_git(self.ledger.path, "write-tree", env=env).decode().strip()
                base = self.ledger.signed_commit(tree, [base], message, self.signer)
                self.records += sorted({found[0] for p in files if (found := record_of(p))
                                        and found[1] == STATEMENT})
        return base

    def _keyring(self, base: str, present: dict[str, str], files: dict[str, str],
                 message: str) -> tuple[dict[str, str], str]:
        """`files` with a keyring version that no longer follows the remote's newest
        made again on top of it, and the commit message renumbered."""
        theirs = max((int(m.group(1)) for p in present if (m := VERSION_FILE.match(p))),
                     default=0)
        out = dict(files)
        for path in files:
            if not (m := VERSION_FILE.match(path)):
                continue
            version = int(m.group(1))
            if version == theirs + 1 and path not in present:
                continue  # made on the version the remote has: replayed as it is
            made = self._remake(base, version)
            del out[path]
            out[file_name(made.version)] = self.ledger.write_blob(self._signed(base, made))
            self.keyring.append(f"keyring version {version} made here was made again on "
                                f"top of the remote's version {theirs}, as version "
                                f"{made.version}")
            message = message.replace(f"keyring v{version}:", f"keyring v{made.version}:", 1)
        return out, message

    def _remake(self, base: str, version: int) -> Keyring:
        if self.local is None or version - 1 not in self.local.versions:
            raise KeyringConflict(f"keyring version {version} made here cannot be replayed")
        theirs = verify_chain(keyring_files(self.ledger, base), self.pin).current
        return compose(theirs, self.local.versions[version - 1], self.local.versions[version])

    def _signed(self, base: str, made: Keyring) -> bytes:
        from registry.signing.keys import local_signers

        files = keyring_files(self.ledger, base)
        theirs = verify_chain(files, self.pin).current
        usable = [s for s in local_signers() if s[0] in {*theirs.roots, *made.roots}]
        data = sign_version(made, usable) if usable else b""
        try:
            verify_chain({**files, made.version: data}, self.pin)
        except RegistryError as e:
            raise KeyringConflict(
                f"the remote's keyring is ahead (version {theirs.version}) and the change made "
                f"here cannot be signed on top of it: {e.message}",
                hint="this home's keyring change is not lost: a root holder of the remote's "
                     "keyring makes it again (registry pull, then registry keys ...)") from None
        return data


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


def _index(home: Home, trusted: Trusted) -> None:
    """Index rows for the records the pull brought or re-committed, from the
    statements already parsed and verified."""
    from registry.store.teachers import index_bindings

    if not trusted.records:
        return
    index = open_index(home)
    index.create()
    entries = []
    for record in trusted.records.values():
        rows = entry_rows(record.id, record.statement, record.signer)
        rows["records"][0]["ledger_commit"] = record.commit
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
