"""Plain `git` on the ledger, with everything a ledger writer could plant switched off.

A ledger may sit on a shared file system or come from a clone, so its `.git/config`,
hooks and attributes are someone else's input. Every call runs with no system or
global configuration, hooks pointed at nothing, no fsmonitor, no automatic gc, and
blobs written with `--no-filters`, so no clean/smudge filter, hook or monitor command
planted in the repository ever runs. Only plumbing is used for writing; nothing
touches the user's index or working tree settings.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from registry.errors import InvalidInput

SAFE_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false",
    "core.sshCommand=false", "gc.auto=0", "maintenance.auto=false", "core.autocrlf=false",
    "core.symlinks=false", "commit.gpgsign=false", "protocol.file.allow=always",
)
IDENTITY = {"GIT_AUTHOR_NAME": "registry", "GIT_AUTHOR_EMAIL": "registry@localhost",
            "GIT_COMMITTER_NAME": "registry", "GIT_COMMITTER_EMAIL": "registry@localhost"}


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0",
               LC_ALL="C")
    env.update(IDENTITY)
    env.update(extra or {})
    return env


def git_args(repo: Path, *args: str) -> list[str]:
    config = [x for pair in SAFE_CONFIG for x in ("-c", pair)]
    return ["git", *config, "-C", str(repo), *args]


def run_git(repo: Path, *args: str, input: bytes | None = None,
            env: Mapping[str, str] | None = None) -> bytes:
    """stdout of one git command on `repo`; a failure is an InvalidInput naming it."""
    done = subprocess.run(git_args(repo, *args), input=input, capture_output=True,
                          env=git_env(env))
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise InvalidInput(f"{repo}: git {args[0]} failed ({why[-1] if why else done.returncode})",
                           hint="is the ledger a git repository registry wrote? "
                                "`registry verify --all` says what is wrong")
    return done.stdout


def git_text(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return run_git(repo, *args, env=env).decode("utf-8", errors="surrogateescape")


def read_objects(repo: Path, shas: Iterable[str]) -> dict[str, tuple[str, bytes]]:
    """sha -> (type, exact bytes) for many objects through one `git cat-file --batch`;
    an object git cannot find is left out."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    out = run_git(repo, "cat-file", "--batch", input="".join(f"{s}\n" for s in wanted).encode())
    found: dict[str, tuple[str, bytes]] = {}
    pos = 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode(errors="replace").split()
        pos = end + 1
        if len(header) != 3:  # "<sha> missing"
            continue
        size = int(header[2])
        found[sha] = (header[1], out[pos:pos + size])
        pos += size + 1  # the object, then a newline
    return found
