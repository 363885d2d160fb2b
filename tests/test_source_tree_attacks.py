"""A source tree is someone else's: nothing configured in it runs when a run is sealed
(issue 34, weakness 1). Each tree is set up as an outsider would, with plain git and
files written by hand; the clean filter of the issue ran on the main of that time."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from registry.seal.sources import capture


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=mallory",
                           "-c", "user.email=m@x", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def planted(tmp_path: Path) -> tuple[Path, Path, str]:
    """A committed tree holding a recipe, and a command that leaves MARK when run."""
    tree, mark = tmp_path / "tree", tmp_path / "MARK"
    tree.mkdir()
    git(tree, "init", "-q")
    (tree / "x.toml").write_text('name = "x"\n')
    (tree / "old.txt").write_text("old\n")
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "recipe")
    return tree, mark, f"sh -c 'touch {mark}; cat'"


def script(tmp_path: Path, mark: Path) -> str:
    path = tmp_path / "planted.sh"
    path.write_text(f"#!/bin/sh\ntouch {mark}\ncat\n")
    path.chmod(0o755)
    return str(path)


MECHANISMS = {
    "clean filter": lambda t, c, s: (git(t, "config", "filter.lfs.clean", c),
                                     (t / ".gitattributes").write_text("* filter=lfs\n")),
    "process filter": lambda t, c, s: (git(t, "config", "filter.p.process", s),
                                       (t / ".gitattributes").write_text("* filter=p\n")),
    "smudge filter": lambda t, c, s: (git(t, "config", "filter.s.smudge", c),
                                      (t / ".gitattributes").write_text("* filter=s\n")),
    "textconv": lambda t, c, s: (git(t, "config", "diff.tc.textconv", s),
                                 (t / ".gitattributes").write_text("* diff=tc\n")),
    "diff driver command": lambda t, c, s: (git(t, "config", "diff.ext.command", s),
                                            (t / ".gitattributes").write_text("* diff=ext\n")),
    "diff.external": lambda t, c, s: git(t, "config", "diff.external", s),
    "fsmonitor": lambda t, c, s: git(t, "config", "core.fsmonitor", s),
    "pager": lambda t, c, s: (git(t, "config", "core.pager", c), git(t, "config", "pager.diff", c)),
    "credential helper": lambda t, c, s: git(t, "config", "credential.helper", f"!{c}"),
    "ssh command": lambda t, c, s: git(t, "config", "core.sshCommand", c),
    "hooks path": lambda t, c, s: git(t, "config", "core.hooksPath", str(Path(s).parent)),
}


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_nothing_configured_in_a_source_tree_runs(tmp_path, mechanism) -> None:
    tree, mark, command = planted(tmp_path)
    planted_script = script(tmp_path, mark)
    MECHANISMS[mechanism](tree, command, planted_script)
    if mechanism == "hooks path":  # every hook a read could reach, named as git names them
        for name in ("post-index-change", "reference-transaction", "post-checkout"):
            Path(planted_script).with_name(name).write_text(Path(planted_script).read_text())
            Path(planted_script).with_name(name).chmod(0o755)
    (tree / "x.toml").write_text('name = "x"\n# tuned\n')  # dirty: git would filter it
    (tree / "old.txt").unlink()
    source, artifacts = capture("recipe", tree / "x.toml")
    assert not mark.exists(), f"{mechanism} ran"
    assert source.dirty and source.commit == git(tree, "rev-parse", "HEAD").strip()
    [diff] = artifacts
    assert diff.data is not None and b"+# tuned" in diff.data
    assert b"deleted file mode 100644" in diff.data and b"-old" in diff.data


def test_hooks_planted_in_the_tree_never_run(tmp_path) -> None:
    tree, mark, _ = planted(tmp_path)
    for name in ("post-index-change", "reference-transaction", "post-checkout"):
        hook = tree / ".git" / "hooks" / name
        hook.write_text(f"#!/bin/sh\ntouch {mark}\n")
        hook.chmod(0o755)
    (tree / "x.toml").write_text('name = "y"\n')
    source, _ = capture("recipe", tree / "x.toml")
    assert source.dirty and not mark.exists()


def test_the_environment_s_git_programs_never_run(tmp_path, monkeypatch) -> None:
    tree, mark, _ = planted(tmp_path)
    for name in ("GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS"):
        monkeypatch.setenv(name, script(tmp_path, mark))
    (tree / "x.toml").write_text('name = "y"\n')
    assert capture("recipe", tree / "x.toml")[0].dirty and not mark.exists()


def test_the_diff_is_of_the_bytes_on_disk_and_leaves_the_tree_untouched(tmp_path) -> None:
    tree, _, _ = planted(tmp_path)
    git(tree, "config", "filter.up.clean", "tr a-z A-Z")  # a filter would change the diff
    (tree / ".gitattributes").write_text("*.toml filter=up\n")
    (tree / "x.toml").write_text('name = "changed"\n')
    (tree / "new.txt").write_text("staged\n")
    git(tree, "add", "new.txt")
    (tree / "run.sh").symlink_to("x.toml")
    index = (tree / ".git" / "index").read_bytes()
    status = git(tree, "status", "--porcelain")
    _, [diff] = capture("recipe", tree)
    assert diff.data is not None
    assert b'+name = "changed"' in diff.data and b"CHANGED" not in diff.data
    assert b"+staged" in diff.data and b"run.sh" not in diff.data  # untracked: not sealed
    assert (tree / ".git" / "index").read_bytes() == index
    assert git(tree, "status", "--porcelain") == status


def test_a_clean_tree_has_no_diff(tmp_path) -> None:
    tree, _, _ = planted(tmp_path)
    source, artifacts = capture("recipe", tree / "x.toml")
    assert not source.dirty and artifacts == [] and source.branch in ("main", "master")


def test_a_path_through_a_symlink_is_resolved_once(tmp_path) -> None:
    """A venv linked into a tree (REGISTRY_ENGINE_PYTHON through a link): the tree that
    holds the link is not the one that holds the files."""
    tree, _, _ = planted(tmp_path)
    venv = tmp_path / "venv" / "lib" / "vllm"
    venv.mkdir(parents=True)
    (venv / "__init__.py").write_text("")
    (tree / "venv").symlink_to(tmp_path / "venv")
    source, artifacts = capture("engine", tree / "venv" / "lib" / "vllm")
    assert source.note == "not tracked by git" and artifacts == []
    assert source.path == str((tmp_path / "venv" / "lib" / "vllm").resolve())
