"""The state of a source tree a run came from: commit, branch, remote, dirty flag and
the uncommitted diff of tracked files (one binary patch against HEAD).

Only tracked files: never `git add -A`, so untracked keys, the registry home and
whatever else lies in the tree are not sealed; the registry home and the keys folder
are excluded even when tracked. A diff over `MAX_DIFF` bytes is recorded by its
digest alone, with a note. A file outside any git tree (a launcher script) is
recorded by path and sha256, never copied: it may be anything, a private key too.

A source tree is someone else's: its `.git/config` and `.gitattributes` may name a clean
filter, a textconv, an external diff or a monitor to run. So git never looks at its
working files here. Every call goes through registry/store/git.py (no hooks, fsmonitor,
pager, credential helper or ssh command; GitPython, opened there, reads the commit,
branch and remote) and reads only the index and the object store; the working files are
hashed here, byte for byte, with no filter, and a changed file's blob is written to a
private object folder, from which a temporary tree is diffed against HEAD (`diff-tree`:
plumbing, no filter, no driver, no textconv). The recorded diff is of the bytes on disk,
never of what a filter would make of them.
Symbolic links in the path are resolved once, first, so the tree found and the path
asked about are the same (a venv linked from elsewhere).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import stat
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from registry.base.hashing import sha256_file
from registry.formats.record import Source
from registry.store.git import open_repo, run_git, try_git
from registry.store.writer import Artifact

MAX_DIFF = 8 * 1024 * 1024
GITLINK = "160000"
Entry = tuple[str, str]  # (mode, blob id) of one path


def capture(role: str, path: Path, exclude: Sequence[Path] = ()) -> tuple[Source, list[Artifact]]:
    """The source at `path` (a tree or a file in one) and the artifacts to seal with it;
    nothing under `exclude` (the registry home, the keys folder) enters the diff."""
    path = Path(os.path.realpath(path))  # once: the tree and the path asked about agree
    if not path.exists():  # e.g. an unexpanded ${VAR}
        return _untracked(role, path)
    repo = _repo(path if path.is_dir() else path.parent)
    if repo is None:
        return _untracked(role, path)
    top = Path(os.path.realpath(str(repo.working_tree_dir)))
    if not run_git(top, "ls-files", "-z", "--", str(path)):  # e.g. a venv inside the tree
        return _untracked(role, path)
    head = repo.head.commit.hexsha if repo.head.is_valid() else None
    branch = None if repo.head.is_detached else repo.active_branch.name
    diff = _diff(top, head, exclude)
    name = f"sources/{role}.diff"
    source = Source(
        role=role, path=str(top), commit=head,
        branch=branch, remote=_remote(repo), dirty=bool(diff),
        diff_sha256=hashlib.sha256(diff).hexdigest() if diff else None,
        diff_artifact=name if diff else None,
    )
    if len(diff) > MAX_DIFF:
        note = (f"uncommitted diff of {len(diff) / 2**20:.1f} MiB is over the "
                f"{MAX_DIFF // 2**20} MiB cap: recorded by digest only; commit your changes")
        return source.model_copy(update={"diff_artifact": None, "note": note}), []
    return source, [Artifact(name=name, data=diff)] if diff else []


def _untracked(role: str, path: Path) -> tuple[Source, list[Artifact]]:
    if path.is_file():  # a lone script: its path and digest, never its bytes
        return Source(role=role, path=str(path), sha256=sha256_file(path),
                      note="not tracked by git; recorded by sha256, not copied"), []
    note = "not tracked by git" if path.exists() else "path does not exist"
    return Source(role=role, path=str(path), note=note), []


def _text(top: Path, *args: str) -> str | None:
    """One line of output of a git query, or None when git answers nothing."""
    done = try_git(top, *args)
    out = done.stdout.decode("utf-8", "surrogateescape").strip()
    return out if done.returncode == 0 and out else None


def _repo(folder: Path) -> Any:
    """The GitPython repository holding `folder` (hardened: registry/store/git.py), or
    None outside any git tree."""
    import git

    try:
        return open_repo(folder)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def _remote(repo: Any) -> str | None:
    """The URL of the branch's upstream remote, else of `origin`, as the config says."""
    import git

    try:
        tracking = None if repo.head.is_detached else repo.active_branch.tracking_branch()
        remote = repo.remote(tracking.remote_name if tracking else "origin")
        return next(iter(remote.urls), None)
    except (ValueError, git.GitCommandError):
        return None


def _diff(top: Path, head: str | None, exclude: Sequence[Path]) -> bytes:
    """Tracked changes against HEAD (no untracked files), the excluded folders left out."""
    algo = _text(top, "rev-parse", "--show-object-format") or "sha1"
    base = _tree(top, head) if head else {}
    staged = _index(top)
    skipped = [p.resolve() for p in exclude]
    changed: dict[str, Entry | None] = {}
    blobs: dict[str, bytes] = {}
    for rel in sorted(base.keys() | staged.keys()):
        if any((top / rel).is_relative_to(s) for s in skipped):
            continue
        now = _on_disk(top / rel, staged.get(rel) or base[rel], algo, blobs)
        if now != base.get(rel):
            changed[rel] = now
    if not changed:
        return b""
    return _patch(top, head, algo, changed, blobs)


def _on_disk(file: Path, known: Entry, algo: str, blobs: dict[str, bytes]) -> Entry | None:
    """(mode, blob id) of a working file as git would store it with no filter; a
    submodule keeps its index entry (its own tree is not read)."""
    if known[0] == GITLINK:
        return known
    try:
        st = file.lstat()
        if stat.S_ISLNK(st.st_mode):
            data, mode = os.readlink(file).encode("utf-8", "surrogateescape"), "120000"
        elif stat.S_ISREG(st.st_mode):
            data, mode = file.read_bytes(), "100755" if st.st_mode & 0o111 else "100644"
        else:
            return None
    except OSError:
        return None
    header = f"blob {len(data)}\0".encode()
    blob = hashlib.new(algo, header + data).hexdigest()
    blobs[blob] = header + data
    return mode, blob


def _tree(top: Path, head: str) -> dict[str, Entry]:
    out = run_git(top, "ls-tree", "-r", "-z", "--full-tree", head)
    found: dict[str, Entry] = {}
    for item in out.split(b"\0"):
        if item:
            meta, rel = item.split(b"\t", 1)
            mode, _, blob = meta.decode().split()
            found[rel.decode("utf-8", "surrogateescape")] = (mode, blob)
    return found


def _index(top: Path) -> dict[str, Entry]:
    out = run_git(top, "ls-files", "-s", "-z")
    found: dict[str, Entry] = {}
    for item in out.split(b"\0"):
        if item:
            meta, rel = item.split(b"\t", 1)
            mode, blob, _ = meta.decode().split()
            found[rel.decode("utf-8", "surrogateescape")] = (mode, blob)
    return found


def _patch(top: Path, head: str | None, algo: str, changed: dict[str, Entry | None],
           blobs: dict[str, bytes]) -> bytes:
    """`diff-tree` of HEAD against a tree of the working files, both objects written
    to a private folder: the tree's own index and objects are never written."""
    common = Path(os.path.realpath(top / (_text(top, "rev-parse", "--git-common-dir") or ".git")))
    with tempfile.TemporaryDirectory(prefix="registry-source-") as tmp:
        objects = Path(tmp, "objects")
        for _, blob in filter(None, changed.values()):
            if blob in blobs:
                loose = objects / blob[:2] / blob[2:]
                loose.parent.mkdir(parents=True, exist_ok=True)
                loose.write_bytes(zlib.compress(blobs[blob]))
        env = {"GIT_INDEX_FILE": str(Path(tmp, "index")), "GIT_OBJECT_DIRECTORY": str(objects),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(common / "objects")}
        objects.mkdir(exist_ok=True)
        run_git(top, "read-tree", *([head] if head else ["--empty"]), env=env)
        zero = "0" * (64 if algo == "sha256" else 40)
        info = "".join(f"{e[0]} {e[1]}\t{rel}\0" if e else f"0 {zero}\t{rel}\0"
                       for rel, e in changed.items())
        run_git(top, "update-index", "-z", "--index-info",
                input=info.encode("utf-8", "surrogateescape"), env=env)
        tree = run_git(top, "write-tree", env=env).decode().strip()
        before = head or run_git(top, "hash-object", "-t", "tree", "--stdin", input=b"",
                                 env=env).decode().strip()
        return run_git(top, "diff-tree", "-r", "-p", "--binary", "--no-ext-diff",
                       "--no-textconv", "--no-color", "--no-renames", before, tree, env=env)


def engine_location(package: str) -> tuple[Path | None, str | None]:
    """Where the engine package is installed and its distribution version, found
    without importing it (importing vLLM costs seconds and pulls in torch)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None, None
    location = Path(next(iter(spec.submodule_search_locations)))
    dists = importlib.metadata.packages_distributions().get(package, [])
    version = importlib.metadata.version(dists[0]) if dists else None
    return location, version
