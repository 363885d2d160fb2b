"""The ledger: a git repository holding, per record, `records/<id>/statement.json`
(the exact signed canonical bytes) and `records/<id>/envelope.json`, plus the
trusted public keys `keys/<keyid>.pub`. Each seal is one commit, made last.

Only what is committed counts: a record folder without a commit (a crash before
`git commit`) is debris, removed by `recover()` under the home lock.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import git

RECORDS = "records"
KEYS = "keys"
STATEMENT = "statement.json"
ENVELOPE = "envelope.json"


class Event(BaseModel):
    """One commit touching one file of a record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    commit: str
    status: str  # git's A, M, D
    file: str


def blob_sha(data: bytes) -> str:
    """git's object id for a blob holding `data` (to compare files with commits)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Ledger:
    def __init__(self, path: Path) -> None:
        import git  # here, not at the top: reading records never needs git

        self.path = path
        self.repo = git.Repo(path)

    @classmethod
    def init(cls, path: Path) -> Ledger:
        import git

        if not (path / ".git").is_dir():
            repo = git.Repo.init(path)
            with repo.config_writer() as cfg:
                cfg.set_value("commit", "gpgsign", "false")  # records are signed by DSSE
                cfg.set_value("core", "autocrlf", "false")
                if not _has_identity(repo):
                    cfg.set_value("user", "name", "registry")
                    cfg.set_value("user", "email", "registry@localhost")
            (path / ".gitattributes").write_text("* -text\n")  # bytes exactly as signed
            repo.git.add(".gitattributes")
            repo.git.commit("-q", "--no-verify", "-m", "registry ledger")
        return cls(path)

    def record_dir(self, record_id: str) -> Path:
        return self.path / RECORDS / record_id

    def recover(self) -> None:
        """Clear what a crashed writer left (call holding the home lock)."""
        (self.path / ".git" / "index.lock").unlink(missing_ok=True)
        self.repo.git.reset("-q")
        self.repo.git.clean("-fdq")  # only the registry writes here: anything untracked is debris

    def commit_record(self, record_id: str, statement: bytes, envelope: bytes, message: str) -> str:
        folder = self.record_dir(record_id)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / STATEMENT).write_bytes(statement)
        (folder / ENVELOPE).write_bytes(envelope)
        return self._commit(f"{RECORDS}/{record_id}", message)

    def commit_file(self, path: str, data: bytes, message: str) -> str | None:
        """Commit one file (call holding the home lock); None if it is already committed
        with these bytes."""
        sha = self.tree_files(path).get(path)
        if sha is not None and self.blob(sha) == data:
            return None
        (self.path / path).parent.mkdir(parents=True, exist_ok=True)
        (self.path / path).write_bytes(data)
        return self._commit(path, message)

    def last_commit(self, path: str) -> str:
        """The latest commit that touched `path`."""
        return str(self.repo.git.log("-1", "--format=%H", "--", path))

    def trust_key(self, keyid: str, pem: str) -> str | None:
        """Commit `keys/<keyid>.pub`; None if it is already trusted."""
        if f"{KEYS}/{keyid}.pub" in self.tree_files(KEYS):
            return None
        return self.commit_file(f"{KEYS}/{keyid}.pub", pem.encode(), f"trust key {keyid}")

    def _commit(self, path: str, message: str) -> str:
        self.repo.git.add("--", path)
        self.repo.git.commit("-q", "--no-verify", "-m", message, "--", path)
        return str(self.repo.git.rev_parse("HEAD"))

    def tree_files(self, prefix: str) -> dict[str, str]:
        """Committed files under `prefix` at HEAD: path -> blob sha."""
        out: dict[str, str] = {}
        for line in self.repo.git.ls_tree("-r", "HEAD", "--", prefix).splitlines():
            meta, path = line.split("\t", 1)
            out[path] = meta.split()[2]
        return out

    def record_ids(self) -> list[str]:
        return sorted({p.split("/")[1] for p in self.tree_files(RECORDS) if p.endswith(STATEMENT)})

    def blob(self, sha: str) -> bytes:
        return bytes(self.repo.odb.stream(bytes.fromhex(sha)).read())

    def trusted_keys_pem(self) -> dict[str, bytes]:
        """keyid -> committed public key PEM."""
        return {Path(p).stem: self.blob(sha) for p, sha in self.tree_files(KEYS).items()
                if p.endswith(".pub")}

    def history(self, record_id: str | None = None) -> dict[str, list[Event]]:
        """record id -> the commits that touched its files, oldest first."""
        where = f"{RECORDS}/{record_id}" if record_id else RECORDS
        log = self.repo.git.log("--reverse", "--format=%x00%H", "--name-status", "--no-renames",
                                "--", where)
        events: dict[str, list[Event]] = defaultdict(list)
        for chunk in log.split("\x00")[1:]:
            sha, *changes = chunk.strip().splitlines()
            for change in filter(None, changes):
                status, path = change.split("\t", 1)
                parts = path.split("/")
                events[parts[1]].append(Event(commit=sha, status=status[0], file=parts[-1]))
        return dict(events)

    def commits(self) -> set[str]:
        return set(self.repo.git.rev_list("HEAD").split())


def _git(path: Path, *args: str) -> str:
    """Plain `git` for the read path: importing gitpython costs more than the call."""
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True,
                          check=True).stdout


def committed_ids(path: Path, prefix: str = "") -> list[str]:
    """Ids of the records committed at HEAD that start with `prefix`."""
    listed = _git(path, "ls-tree", "--name-only", "HEAD", f"{RECORDS}/").splitlines()
    return sorted(rid for line in listed if (rid := line.split("/", 1)[1]).startswith(prefix))


def adding_commit(path: Path, record_id: str) -> str | None:
    """The commit that added a record's statement."""
    found = _git(path, "log", "--diff-filter=A", "-1", "--format=%H", "--",
                 f"{RECORDS}/{record_id}/{STATEMENT}").strip()
    return found or None


def _has_identity(repo: git.Repo) -> bool:
    import git

    try:
        return bool(repo.git.config("--get", "user.email"))
    except git.GitCommandError:
        return False
