"""The state of a source tree a run came from: commit, branch, remote, dirty flag and
the uncommitted diff (tracked changes and untracked files, as one binary patch made
against a temporary index, so the user's own index is never touched).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import shutil
import tempfile
from pathlib import Path

import git

from registry.record import Source
from registry.store.writer import Artifact

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def capture(role: str, path: Path) -> tuple[Source, list[Artifact]]:
    """The source at `path` (a tree or a file in one) and the artifacts to seal with it."""
    if not path.exists():  # e.g. an unexpanded ${VAR}: GitPython would warn about it
        return _untracked(role, path)
    try:
        repo = git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return _untracked(role, path)
    if not repo.git.ls_files("--", str(path.resolve())):  # e.g. a venv inside a project
        return _untracked(role, path)
    head = repo.head.commit.hexsha if repo.head.is_valid() else None
    diff = _diff(repo, head)
    name = f"sources/{role}.diff"
    return Source(
        role=role, path=str(repo.working_tree_dir), commit=head,
        branch=None if repo.head.is_detached else repo.active_branch.name,
        remote=_remote(repo), dirty=bool(diff),
        diff_sha256=hashlib.sha256(diff).hexdigest() if diff else None,
        diff_artifact=name if diff else None,
    ), [Artifact(name=name, data=diff)] if diff else []


def _untracked(role: str, path: Path) -> tuple[Source, list[Artifact]]:
    if path.is_file():  # a lone script: seal the file itself
        name = f"sources/{role}/{path.name}"
        return (Source(role=role, path=str(path), note=f"not tracked by git; sealed as {name}"),
                [Artifact(name=name, path=path)])
    note = "not tracked by git" if path.exists() else "path does not exist"
    return Source(role=role, path=str(path), note=note), []


def _diff(repo: git.Repo, head: str | None) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        index = Path(tmp) / "index"
        if (Path(repo.git_dir) / "index").exists():
            shutil.copyfile(Path(repo.git_dir) / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        repo.git.add("-A", env=env)
        out = repo.git.diff("--cached", "--binary", head or EMPTY_TREE, env=env,
                            stdout_as_string=False, strip_newline_in_stdout=False)
    return bytes(out)


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
