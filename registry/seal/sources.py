"""The state of a source tree a run came from: commit, branch, remote, dirty flag and
the uncommitted diff of tracked files (one binary patch against HEAD).

Only tracked files: never `git add -A`, so untracked keys, the registry home and
whatever else lies in the tree are not sealed; the registry home and the keys folder
are excluded even when tracked. A diff over `MAX_DIFF` bytes is recorded by its
digest alone, with a note. A file outside any git tree (a launcher script) is
recorded by path and sha256, never copied: it may be anything, a private key too.
Git runs through registry/store/git.py: no hooks, fsmonitor, diff drivers or
textconv of the repository run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import git

from registry.base.hashing import sha256_file
from registry.formats.record import Source
from registry.store.git import open_repo, run_git
from registry.store.writer import Artifact

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


MAX_DIFF = 8 * 1024 * 1024


def capture(role: str, path: Path, exclude: Sequence[Path] = ()) -> tuple[Source, list[Artifact]]:
    """The source at `path` (a tree or a file in one) and the artifacts to seal with it;
    nothing under `exclude` (the registry home, the keys folder) enters the diff."""
    if not path.exists():  # e.g. an unexpanded ${VAR}: GitPython would warn about it
        return _untracked(role, path)
    path = path.resolve()  # once: a symlinked venv is asked about where it really is
    try:
        repo = open_repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return _untracked(role, path)
    top = Path(str(repo.working_tree_dir))
    if not run_git(top, "ls-files", "-z", "--", str(path.resolve())):  # e.g. a venv inside
        return _untracked(role, path)
    head = repo.head.commit.hexsha if repo.head.is_valid() else None
    diff = _diff(top, head, exclude)
    name = f"sources/{role}.diff"
    source = Source(
        role=role, path=str(top), commit=head,
        branch=None if repo.head.is_detached else repo.active_branch.name,
        remote=_remote(repo), dirty=bool(diff),
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


def _diff(top: Path, head: str | None, exclude: Sequence[Path]) -> bytes:
    """Tracked changes against HEAD (no untracked files), the excluded folders left out."""
    skip = [f":(exclude,top){p.resolve().relative_to(top.resolve()).as_posix()}"
            for p in exclude if p.resolve().is_relative_to(top.resolve())]
    return run_git(top, "diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color",
                   head or EMPTY_TREE, "--", ".", *skip)


def _remote(repo: git.Repo) -> str | None:
    try:
        tracking = None if repo.head.is_detached else repo.active_branch.tracking_branch()
        remote = repo.remote(tracking.remote_name if tracking else "origin")
        return next(iter(remote.urls), None)
    except (ValueError, git.GitCommandError):
        return None


def engine_location(package: str = "vllm") -> tuple[Path | None, str | None]:
    """Where the engine package is installed and its distribution version, found
    without importing it (importing vLLM costs seconds and pulls in torch)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None, None
    location = Path(next(iter(spec.submodule_search_locations)))
    dists = importlib.metadata.packages_distributions().get(package, [])
    version = importlib.metadata.version(dists[0]) if dists else None
    return location, version
