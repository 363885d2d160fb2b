"""The ledger's whole history, checked: signed, linear, append-only, and a descendant
of the head this home last verified.

One `git rev-list`, one `git cat-file --batch` and one `git diff-tree --stdin` read
every commit; signatures are checked in process. Each commit must be signed by a key
active in the keyring in effect at that commit (the version its parent had, or, for a
commit adding a keyring version, that version's keys), and may only add records, add
keyring versions, set teacher bindings and add verification attestations and claim
events (registry/store/attestations.py). Records, keyring versions, attestations and
claim events are never changed or deleted; a merge is refused (the history of a ledger
is a line).
"""

from __future__ import annotations

import re

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.base.model import Frozen
from registry.signing.commits import Commit, parse_commit
from registry.signing.keyring import VERSION_FILE, Chain, Keyring, Role
from registry.store.git import git_text, read_objects, run_git
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, Ledger

TEACHERS = "teachers"
_SHA = re.compile(rb"[0-9a-f]{40}\Z")
_RECORD_FILE = re.compile(rf"{RECORDS}/([0-9a-f]{{64}})/({STATEMENT}|{ENVELOPE})\Z")
_TEACHER_FILE = re.compile(rf"{TEACHERS}/[^/]+\.json\Z")
# --- added only, never changed (registry/store/attestations.py; kept apart for merges) ---
_APPEND_ONLY = re.compile(r"(verifications/[0-9a-f]{64}|claims/[a-z0-9][a-z0-9._-]{0,127}"
                          r"/[0-9a-f]{64})\.json\Z")


class HistoryProblem(Frozen):
    commit: str | None
    detail: str


class History(Frozen):
    head: str | None
    added: dict[str, str]  # record id -> the commit that added it
    keyring_at: dict[str, int]  # record id -> keyring version in effect when added
    problems: list[HistoryProblem]


Change = tuple[str, str]  # (git status letter, path)


def check_history(ledger: Ledger, chain: Chain, last_verified: str | None,
                  ref: str | None = None) -> History:
    """The history of the ledger's branch, or of commit `ref` (an incoming pull)."""
    head = ref or ledger.head()
    if head is None:
        return History(head=None, added={}, keyring_at={}, problems=[])
    order = [line.split() for line in git_text(ledger.path, "rev-list", "--reverse", "--parents",
                                               head).splitlines()]
    shas = [entry[0] for entry in order]
    objects = read_objects(ledger.path, shas)
    changes = _changes(ledger, shas)
    walk = _Walk(chain)
    if last_verified and last_verified not in set(shas):
        walk.problem(None, f"history was rewritten: the ledger's head {head[:12]} does not "
                           f"descend from {last_verified[:12]}, the head this home last verified")
    for entry in order:
        sha = entry[0]
        kind, raw = objects.get(sha, ("missing", b""))
        commit = parse_commit(sha, raw) if kind == "commit" else None
        walk.step(sha, commit, len(entry) - 1, changes.get(sha, []))
    return History(head=head, added=walk.added, keyring_at=walk.keyring_at,
                   problems=walk.problems)


def _changes(ledger: Ledger, shas: list[str]) -> dict[str, list[Change]]:
    """commit -> (status, path) of every file it changed, from one `git diff-tree`."""
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

    def problem(self, sha: str | None, detail: str) -> None:
        self.problems.append(HistoryProblem(commit=sha, detail=detail))

    def step(self, sha: str, commit: Commit | None, parents: int, changes: list[Change]) -> None:
        if commit is None:
            self.problem(sha, f"commit {sha[:12]} cannot be read")
            return
        if parents > 1:
            self.problem(sha, f"merge commit {sha[:12]}: a ledger's history must be linear")
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
            self.problem(commit.sha, f"commit {sha} {commit.foreign}")
            return
        if commit.keyid is None:
            self.problem(commit.sha, f"commit {sha} is not signed ({_subject(commit)})")
            return
        keys = self._signers(versions)
        key = keys.get(commit.keyid)
        if key is None:
            self.problem(commit.sha, f"commit {sha} is signed by key {commit.keyid[:16]}, which "
                                     "the keyring in effect does not trust")
        elif not commit.verifies(key):
            self.problem(commit.sha, f"commit {sha}: its signature does not verify")
        elif commit.keyid in self.revoked:
            self.problem(commit.sha, f"commit {sha} is signed by revoked key "
                                     f"{commit.keyid[:16]} ({self.revoked[commit.keyid].reason})")

    def _check_change(self, sha: str, status: str, path: str) -> None:
        short = sha[:12]
        if m := _RECORD_FILE.match(path):
            rid = m.group(1)
            if status != "A":
                what = "deleted" if status == "D" else "changed"
                self.problem(sha, f"record {rid[:16]}: {m.group(2)} {what} by commit {short}")
            elif m.group(2) == STATEMENT:
                if rid in self.added:
                    self.problem(sha, f"record {rid[:16]} added twice (again by {short})")
                self.added[rid] = sha
                self.keyring_at[rid] = self.keyring.version if self.keyring else 0
        elif VERSION_FILE.match(path):
            if status != "A":
                self.problem(sha, f"{path} changed by commit {short}: keyring versions are "
                                  "never changed")
        elif _TEACHER_FILE.match(path):
            if status == "D":
                self.problem(sha, f"{path} deleted by commit {short}")
        elif _APPEND_ONLY.match(path):  # attestations and claim events: only ever added
            if status != "A":
                what = "deleted" if status == "D" else "changed"
                self.problem(sha, f"{path} {what} by commit {short}: attestations and claim "
                                  "events are only ever added")
        else:
            self.problem(sha, f"commit {short} {'adds' if status == 'A' else 'touches'} "
                              f"{path!r}, which is not a ledger file")


def _subject(commit: Commit) -> str:
    line = commit.message.strip().splitlines()[0] if commit.message.strip() else ""
    return repr(line[:60])
