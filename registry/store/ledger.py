"""The ledger: a git repository holding, per record, `records/<ab>/<id>/statement.json`
(the exact signed canonical bytes) and `envelope.json` beside it, where `<ab>` is the
id's first two digits, every version of the keyring (`keyring/<N>.json`) and the
lanes' teacher bindings (`teachers/`).

Records sit in 256 shards so that a commit changes a small tree: git diffs each
commit's trees to check the history, and a flat `records/` tree of N records made
that quadratic. Ledgers written before keep their records at `records/<id>/`: both
places are read everywhere, new records always go to their shard (docs/formats.md).
Each change is one signed commit (registry/signing/commits.py), made last; history is
linear and only appended to (registry/store/history.py checks it).

Writing uses git plumbing only, through registry/store/git.py: blobs and the signed
commit written as loose objects by the registry itself (so no filter touches them),
the index updated and written as a tree, then `update-ref` with the old head as a
compare-and-swap. No hook, filter or repository config runs. The
working tree gets the same bytes so readers can open a record without git.

Only what is committed counts: a record folder without a commit (a crash before
`update-ref`) is debris, removed by `recover()` under the home lock.
"""

from __future__ import annotations

import hashlib
import re
import time
import zlib
from pathlib import Path
from typing import NamedTuple

from registry.base.canonical import is_git_sha
from registry.base.files import write_bytes
from registry.errors import InvalidInput
from registry.signing.keys import Signer
from registry.store.git import git_text, read_objects, run_git

RECORDS = "records"
STATEMENT = "statement.json"
ENVELOPE = "envelope.json"
BRANCH = "refs/heads/main"


RECORD_FOLDER = (rf"{RECORDS}/(?:(?P<shard>[0-9a-f]{{2}})/)?(?P<id>(?(shard)"
                 rf"(?P=shard)[0-9a-f]{{62}}|[0-9a-f]{{64}}))")
"""A record's folder, as a pattern: in its shard (`records/ab/ab...`) or where ledgers
before shards kept it (`records/ab...`); the shard, when there is one, is the id's start."""
RECORD_PATH = re.compile(rf"{RECORD_FOLDER}/(?P<name>[^/]+)\Z")
"""A file in a record's folder."""


def record_folder(record_id: str) -> str:
    """Where a new record's files go in the ledger: the folder of its shard."""
    return f"{RECORDS}/{record_id[:2]}/{record_id}"


def folder_at(ledger: Path, record_id: str) -> Path:
    """A record's folder in the working tree of the ledger at `ledger`: `records/<id>/` in
    a ledger from before shards, else its shard's."""
    flat = ledger / RECORDS / record_id
    return flat if flat.is_dir() else ledger / record_folder(record_id)


def record_of(path: str) -> tuple[str, str] | None:
    """(record id, file name) of a record file's ledger path, either layout; else None."""
    m = RECORD_PATH.match(path)
    return None if m is None else (m.group("id"), m.group("name"))


class Committed(NamedTuple):
    """A committed record's folder in the ledger and its files (name -> blob id)."""

    folder: str
    blobs: dict[str, str]


def blob_sha(data: bytes) -> str:
    """git's object id for a blob holding `data` (to compare files with commits)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Ledger:
    def __init__(self, path: Path) -> None:
        if not (path / ".git").is_dir():
            raise InvalidInput(f"{path}: not a ledger (no .git)", hint="registry init")
        self.path = path

    @classmethod
    def init(cls, path: Path) -> Ledger:
        """An empty ledger; its first commit is the keyring's first version."""
        if not (path / ".git").is_dir():
            path.mkdir(parents=True, exist_ok=True)
            run_git(path, "init", "-q")
            run_git(path, "symbolic-ref", "HEAD", BRANCH)
        return cls(path)

    def head(self) -> str | None:
        """The branch's commit, read from the ref files (no git process: seal reads it
        often); None on an empty ledger."""
        git_dir = self.path / ".git"
        try:
            found = (git_dir / BRANCH).read_text().strip()
        except OSError:
            found = next((line.split()[0] for line in _lines(git_dir / "packed-refs")
                          if line.endswith(f" {BRANCH}")), "")
        return found if is_git_sha(found) else None

    def record_dir(self, record_id: str) -> Path:
        """The record's folder in the working tree: where it is, a ledger from before
        shards keeping it at `records/<id>/`, else where its shard would hold it."""
        return folder_at(self.path, record_id)

    def recover(self) -> None:
        """Clear what a crashed writer left (call holding the home lock): the index
        back to HEAD, untracked files removed (only the registry writes here)."""
        (self.path / ".git" / "index.lock").unlink(missing_ok=True)
        if self.head():
            run_git(self.path, "read-tree", BRANCH)
        run_git(self.path, "clean", "-fdqx")

    def commit(self, files: dict[str, bytes], message: str, signer: Signer) -> str:
        """Commit `files` (path -> bytes) in one signed commit; returns its id. Call
        holding the home lock, after `recover()` (the index then equals HEAD)."""
        parent = self.head()
        for path, data in files.items():  # readers open these; a crash leaves debris
            target = self.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(target, data)
        entries = "".join(f"100644 {self._write_object('blob', data)}\t{path}\n"
                          for path, data in files.items())
        run_git(self.path, "update-index", "--index-info", input=entries.encode())
        tree = git_text(self.path, "write-tree").strip()
        sha = self.signed_commit(tree, [parent] if parent else [], message, signer)
        run_git(self.path, "update-ref", BRANCH, sha, parent or "0" * 40)
        return sha

    def signed_commit(self, tree: str, parents: list[str], message: str, signer: Signer) -> str:
        """A signed commit object of `tree`, written directly (no ref moves); its id."""
        from registry.signing.commits import PERSON, commit_bytes, signed_message  # writers'

        person = f"{PERSON} {int(time.time())} +0000"
        text = signed_message(message, tree, parents, person, signer)
        return self._write_object("commit", commit_bytes(tree, parents, person, text))

    def write_blob(self, data: bytes) -> str:
        """A blob written as a loose object (no ref moves); its id."""
        return self._write_object("blob", data)

    def _write_object(self, kind: str, data: bytes) -> str:
        """A loose git object written directly (zlib, temp file, rename): no process,
        and no filter can touch the bytes."""
        raw = b"%s %d\0" % (kind.encode(), len(data)) + data
        sha = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        target = self.path / ".git" / "objects" / sha[:2] / sha[2:]
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            write_bytes(target, zlib.compress(raw, 1))
        return sha

    def commit_record(self, record_id: str, statement: bytes, envelope: bytes, message: str,
                      signer: Signer) -> str:
        folder = record_folder(record_id)
        return self.commit({f"{folder}/{STATEMENT}": statement, f"{folder}/{ENVELOPE}": envelope},
                           message, signer)

    def commit_file(self, path: str, data: bytes, message: str, signer: Signer) -> str | None:
        """Commit one file; None if it is already committed with these bytes."""
        sha = self.tree_files(path).get(path)
        if sha is not None and sha == blob_sha(data):
            return None
        return self.commit({path: data}, message, signer)

    def last_commit(self, path: str) -> str:
        """The latest commit that touched `path`."""
        return git_text(self.path, "log", "-1", "--format=%H", BRANCH, "--", path).strip()

    def tree_files(self, prefix: str, ref: str = BRANCH) -> dict[str, str]:
        """Committed files under `prefix` at `ref` (default HEAD): path -> blob sha."""
        if ref == BRANCH and not self.head():
            return {}
        listed = run_git(self.path, "ls-tree", "-r", "-z", ref, *(["--", prefix] if prefix else []))
        out: dict[str, str] = {}
        for entry in filter(None, listed.split(b"\0")):
            meta, _, path = entry.partition(b"\t")
            out[path.decode("utf-8", errors="surrogateescape")] = meta.split()[2].decode()
        return out

    def materialize(self, old: str | None, new: str) -> None:
        """The working tree and index to `new` from `old` (None: every file): files
        written from their blobs (no checkout, so no filter or attribute of the
        repository runs)."""
        args = ["diff-tree", "-r", "-z", "--no-renames", old, new] if old else \
            ["ls-tree", "-r", "-z", new]
        out = run_git(self.path, *args)
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
        blobs = self.blobs(list(wanted.values()))
        for name, blob in wanted.items():
            (self.path / name).parent.mkdir(parents=True, exist_ok=True)
            write_bytes(self.path / name, blobs[blob])
        run_git(self.path, "read-tree", BRANCH)

    def records(self, ref: str = BRANCH) -> dict[str, Committed]:
        """Every record committed at `ref`, either layout: id -> its folder and files."""
        out: dict[str, Committed] = {}
        for path, blob in self.tree_files(RECORDS, ref).items():
            found = record_of(path)
            if found is not None:
                rid, name = found
                entry = out.setdefault(rid, Committed(path.rpartition("/")[0], {}))
                if path.startswith(entry.folder + "/"):  # one folder only, the first listed
                    entry.blobs[name] = blob
        return out

    def record_ids(self, ref: str = BRANCH) -> list[str]:
        return sorted(rid for rid, entry in self.records(ref).items() if STATEMENT in entry.blobs)

    def blob(self, sha: str) -> bytes:
        return self.blobs([sha]).get(sha, b"")

    def blobs(self, shas: list[str]) -> dict[str, bytes]:
        return {sha: data for sha, (_, data) in read_objects(self.path, shas).items()}

    def committed_files(self, files: dict[str, str]) -> dict[str, bytes]:
        """path -> bytes of HEAD's files (`files`: path -> blob sha, from `tree_files`):
        each read from the working tree when it hashes to its committed blob there (as
        it does unless a write was cut short), so a reader starts no git process; the
        rest from git."""
        out: dict[str, bytes] = {}
        for path, sha in files.items():
            data = self._working_file(path)
            if data is not None and blob_sha(data) == sha:
                out[path] = data
        missing = {path: sha for path, sha in files.items() if path not in out}
        blobs = self.blobs(list(missing.values())) if missing else {}
        return {**out, **{path: blobs.get(sha, b"") for path, sha in missing.items()}}

    def _working_file(self, path: str) -> bytes | None:
        target = self.path / path
        try:
            if target.is_symlink() or target.stat().st_size > WORKING_FILE_MAX:
                return None
            return target.read_bytes()
        except OSError:
            return None


WORKING_FILE_MAX = 1 << 20  # a keyring version is a few KiB: anything larger asks git


def committed_ids(path: Path, prefix: str = "") -> list[str]:
    """Ids of the records committed at HEAD that start with `prefix`: the folders of
    `records/` (a ledger from before shards), then those of the shards that can hold
    such an id (one shard for a prefix of two digits or more)."""
    if not Ledger(path).head():
        return []
    shard = [f"{RECORDS}/{prefix[:2]}/"] if len(prefix) >= 2 else []  # listed at once
    listed = _names(run_git(path, "ls-tree", "-z", "--name-only", BRANCH, f"{RECORDS}/", *shard))
    top = [name for folder, name in listed if folder == RECORDS]
    ids = [name for folder, name in listed if name.startswith(prefix) and len(name) == 64]
    if not shard and (shards := [f"{RECORDS}/{n}/" for n in top if len(n) == 2]):
        inner = _names(run_git(path, "ls-tree", "-z", "--name-only", BRANCH, *shards))
        ids += [name for _, name in inner if name.startswith(prefix) and len(name) == 64]
    return sorted(set(ids))


def _names(listed: bytes) -> list[tuple[str, str]]:
    """(folder, name) of each path `ls-tree -z --name-only` listed."""
    paths = (e.decode(errors="replace") for e in listed.split(b"\0") if e)
    return [(folder, name) for folder, _, name in (p.rpartition("/") for p in paths)]


def adding_commit(path: Path, record_id: str) -> str | None:
    """The commit that added a record's statement (in its shard, or where a ledger from
    before shards kept it)."""
    found = git_text(path, "log", "--diff-filter=A", "-1", "--format=%H", BRANCH, "--",
                     *statement_paths(record_id)).strip()
    return found or None


def statement_paths(record_id: str) -> tuple[str, str]:
    """The two places a record's statement can be committed: its shard, and `records/`."""
    return f"{record_folder(record_id)}/{STATEMENT}", f"{RECORDS}/{record_id}/{STATEMENT}"


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()
    except OSError:
        return []
