"""The ledger's whole history, checked: signed, linear, append-only, and a descendant
of the head this home last verified.

One `git rev-list`, one `git cat-file --batch` and one `git diff-tree --stdin` read
every commit (`read_commits`); the walk over them (`walk`) is pure: signatures are
checked in process, and each problem carries its failure kind
(registry.signing.failures). Each commit must be signed by a key
active in the keyring in effect at that commit (the version its parent had, or, for a
commit adding a keyring version, that version's keys), and may only add records, add
keyring versions, set teacher bindings and add verification attestations and claim
events (registry/store/attestations.py). Records, keyring versions, attestations and
claim events are never changed or deleted; a merge is refused (the history of a ledger
is a line).

What a commit may add or change is one table, `ALLOWED`: a ledger path pattern and the
git statuses allowed for it. A new statement kind is one more row.
"""

from __future__ import annotations

import re

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.base.model import Frozen
from registry.signing.commits import Commit, parse_commit
from registry.signing.failures import Failure, Kind, failure
from registry.signing.keyring import VERSION_FILE, Chain, Keyring, Role
from registry.store.git import git_text, object_sizes, read_objects, run_git
from registry.store.ledger import ENVELOPE, RECORD_FOLDER, STATEMENT, Ledger

TEACHERS = "teachers"
_SHA = re.compile(rb"[0-9a-f]{40}\Z")
_RECORD_FILE = re.compile(rf"{RECORD_FOLDER}/(?P<name>{STATEMENT}|{ENVELOPE})\Z")
_TEACHER_FILE = re.compile(rf"{TEACHERS}/[^/]+\.json\Z")
# verification attestations, claim events (registry/store/attestations.py) and contributor
# credit facts (registry/publish/credits.py)
_APPEND_ONLY = re.compile(r"(verifications/[0-9a-f]{64}|claims/[a-z0-9][a-z0-9._-]{0,127}"
                          r"/[0-9a-f]{64}|credits/[a-z0-9][a-z0-9-]{0,127}/[0-9a-f]{64})"
                          r"\.json\Z")


class Rule(Frozen):
    """Which ledger files a commit may touch, and how: git statuses allowed (A added,
    M modified, D deleted)."""

    name: str
    pattern: re.Pattern[str]
    statuses: frozenset[str]


ALLOWED: tuple[Rule, ...] = (
    Rule(name="record", pattern=_RECORD_FILE, statuses=frozenset("A")),  # never changed
    Rule(name="keyring", pattern=VERSION_FILE, statuses=frozenset("A")),  # never changed
    Rule(name="teacher", pattern=_TEACHER_FILE, statuses=frozenset("AM")),  # moves, kept
    Rule(name="attestation", pattern=_APPEND_ONLY, statuses=frozenset("A")),  # and claim events
)
"""The one table of what history may add: one row per ledger file kind."""


MAX_BYTES = {"commit": 1 << 20, "tree": 16 << 20, "blob": 64 << 20, "tag": 0}
"""The largest object of each kind a pull reads: a registry commit is a few hundred
bytes, a tree of 100,000 records about 10 MB, a statement well under a megabyte.
Larger ones are refused before anything reads them (a tag is never a ledger's)."""


def oversized(ledger: Ledger, ref: str, known: str | None) -> list[HistoryProblem]:
    """Objects that `ref` brings beyond those reachable from `known`, over MAX_BYTES:
    found from their sizes alone, none read."""
    found = []
    for sha, (kind, size) in sorted(object_sizes(ledger.path, ref, known).items()):
        cap = MAX_BYTES.get(kind, 0)
        if size > cap:
            found.append(HistoryProblem(
                commit=None, kind=Kind.malformed,
                detail=f"{kind} {sha[:12]} is {size:,} bytes, over the {cap:,} byte cap "
                       "of a ledger's objects: not read"))
    return found


class HistoryProblem(Frozen):
    commit: str | None
    detail: str
    kind: Kind = Kind.malformed

    def failure(self) -> Failure:
        return failure(self.kind, self.detail)


class History(Frozen):
    head: str | None
    added: dict[str, str]  # record id -> the commit that added it
    keyring_at: dict[str, int]  # record id -> keyring version in effect when added
    problems: list[HistoryProblem]


Change = tuple[str, str]  # (git status letter, path)


class Commits(Frozen):
    """A history as read from git: commits oldest first, each with its parents, its
    raw object and the files it changed. The input of the pure `walk`."""

    head: str | None
    order: list[list[str]]  # [sha, parent...] per commit, oldest first
    objects: dict[str, tuple[str, bytes]]  # sha -> (git type, raw bytes)
    changes: dict[str, list[Change]]


def check_history(ledger: Ledger, chain: Chain, last_verified: str | None,
                  ref: str | None = None) -> History:
    """The history of the ledger's branch, or of commit `ref` (an incoming pull)."""
    return walk(read_commits(ledger, ref), chain, last_verified)


def read_commits(ledger: Ledger, ref: str | None = None) -> Commits:
    """Every commit of the branch (or of `ref`) in three git processes."""
    head = ref or ledger.head()
    if head is None:
        return Commits(head=None, order=[], objects={}, changes={})
    order = [line.split() for line in git_text(ledger.path, "rev-list", "--reverse", "--parents",
                                               head).splitlines()]
    shas = [entry[0] for entry in order]
    return Commits(head=head, order=order, objects=read_objects(ledger.path, shas),
                   changes=_changes(ledger, shas))


def walk(commits: Commits, chain: Chain, last_verified: str | None) -> History:
    """The checked history: pure, from what `read_commits` read."""
    head = commits.head
    if head is None:
        return History(head=None, added={}, keyring_at={}, problems=[])
    state = _Walk(chain)
    if last_verified and last_verified not in {entry[0] for entry in commits.order}:
        state.problem(None, f"history was rewritten: the ledger's head {head[:12]} does not "
                            f"descend from {last_verified[:12]}, the head this home last "
                            "verified", Kind.rolled_back)
    for entry in commits.order:
        sha = entry[0]
        kind, raw = commits.objects.get(sha, ("missing", b""))
        commit = parse_commit(sha, raw) if kind == "commit" else None
        state.step(sha, commit, len(entry) - 1, commits.changes.get(sha, []))
    return History(head=head, added=state.added, keyring_at=state.keyring_at,
                   problems=state.problems)


def _changes(ledger: Ledger, shas: list[str]) -> dict[str, list[Change]]:
    """commit -> (status, path) of every file it changed, from `git diff-tree`: one
    process per core over its share of the commits (each commit is diffed against its
    own parents, so the shares are independent; on a ledger of 10,000 records this is
    the longest part of `verify --all`)."""
    from concurrent.futures import ThreadPoolExecutor

    from registry.base.hashing import cpu_count

    workers = max(1, min(cpu_count(), 4, len(shas) // 1000))
    size = -(-len(shas) // workers)  # runs of consecutive commits: each tree read once
    shares = [shas[i:i + size] for i in range(0, len(shas), size)] or [[]]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        found: dict[str, list[Change]] = {}
        for part in pool.map(lambda share: _diff_tree(ledger, share), shares):
            found.update(part)
    return found


def _diff_tree(ledger: Ledger, shas: list[str]) -> dict[str, list[Change]]:
    out = run_git(ledger.path, "diff-tree", "--stdin", "-r", "-z", "--root", "--no-renames",
                  "--name-status", input="".join(f"{s}\n" for s in shas).encode())
    found: dict[str, list[Change]] = {}
    tokens = out.split(b"\0")
    current: list[Change] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if _SHA.match(token):  # a status is one letter and a path follows it: unambiguous
            current = found.setdefault(token.decode(), [])
            i += 1
        elif token and i + 1 < len(tokens):
            current.append((token[:1].decode(), tokens[i + 1].decode("utf-8", "replace")))
            i += 2
        else:
            i += 1
    return found


class _Walk:
    """The state of the walk: keyring in effect, records seen, problems."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.keyring: Keyring | None = None
        self.added: dict[str, str] = {}
        self.keyring_at: dict[str, int] = {}
        self.problems: list[HistoryProblem] = []
        self.revoked = {d.keyid: d for d in chain.current.revoked}

    def problem(self, sha: str | None, detail: str, kind: Kind = Kind.malformed) -> None:
        self.problems.append(HistoryProblem(commit=sha, detail=detail, kind=kind))

    def step(self, sha: str, commit: Commit | None, parents: int, changes: list[Change]) -> None:
        if commit is None:
            self.problem(sha, f"commit {sha[:12]} cannot be read")
            return
        if parents > 1:
            self.problem(sha, f"merge commit {sha[:12]}: a ledger's history must be linear",
                         Kind.not_linear)
        versions = [int(m.group(1)) for _, path in changes
                    if (m := VERSION_FILE.match(path))]
        self._check_signature(commit, versions)
        for version in versions:
            if version in self.chain.versions:
                self.keyring = self.chain.versions[version]
        for status, path in changes:
            self._check_change(sha, status, path)

    def _signers(self, versions: list[int]) -> dict[str, Ed25519PublicKey]:
        keys: dict[str, Ed25519PublicKey] = {}
        rings = [self.keyring] + [self.chain.versions.get(v) for v in versions]
        for ring in filter(None, rings):
            keys.update(ring.with_role(Role.signer))
            keys.update(ring.roots)
        return keys

    def _check_signature(self, commit: Commit, versions: list[int]) -> None:
        sha = commit.sha[:12]
        if commit.foreign:
            self.problem(commit.sha, f"commit {sha} {commit.foreign}", Kind.unsigned)
            return
        if commit.keyid is None:
            self.problem(commit.sha, f"commit {sha} is not signed ({_subject(commit)})",
                         Kind.unsigned)
            return
        keys = self._signers(versions)
        key = keys.get(commit.keyid)
        if key is None:
            self.problem(commit.sha, f"commit {sha} is signed by key {commit.keyid[:16]}, which "
                                     "the keyring in effect does not trust", Kind.unknown_key)
        elif not commit.verifies(key):
            self.problem(commit.sha, f"commit {sha}: its signature does not verify",
                         Kind.bad_signature)
        elif commit.keyid in self.revoked and self.revoked[commit.keyid].voids_past:
            self.problem(commit.sha, f"commit {sha} is signed by revoked key "
                                     f"{commit.keyid[:16]} ({self.revoked[commit.keyid].reason})",
                         Kind.revoked)

    def _check_change(self, sha: str, status: str, path: str) -> None:
        short = sha[:12]
        rule = next((r for r in ALLOWED if r.pattern.match(path)), None)
        if rule is None:
            self.problem(sha, f"commit {short} {'adds' if status == 'A' else 'touches'} "
                              f"{path!r}, which is not a ledger file", Kind.not_append_only)
        elif status not in rule.statuses:
            self.problem(sha, _not_allowed(rule, path, status, short), Kind.not_append_only)
        elif rule.name == "record":
            self._added(sha, path)

    def _added(self, sha: str, path: str) -> None:
        m = _RECORD_FILE.match(path)
        if m is None or m.group("name") != STATEMENT:
            return
        rid = m.group("id")
        if rid in self.added:
            self.problem(sha, f"record {rid[:16]} added twice (again by {sha[:12]})",
                         Kind.not_append_only)
        self.added[rid] = sha
        self.keyring_at[rid] = self.keyring.version if self.keyring else 0


def _not_allowed(rule: Rule, path: str, status: str, short: str) -> str:
    what = "deleted" if status == "D" else "changed"
    if rule.name == "record" and (m := _RECORD_FILE.match(path)):
        return f"record {m.group('id')[:16]}: {m.group('name')} {what} by commit {short}"
    if rule.name == "keyring":
        return f"{path} changed by commit {short}: keyring versions are never changed"
    if rule.name == "attestation":
        return (f"{path} {what} by commit {short}: attestations and claim events are only "
                "ever added")
    return f"{path} {what} by commit {short}"


def _subject(commit: Commit) -> str:
    line = commit.message.strip().splitlines()[0] if commit.message.strip() else ""
    return repr(line[:60])
