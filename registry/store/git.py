"""Plain `git` on the ledger, with everything a ledger writer could plant switched off.

A ledger may sit on a shared file system or come from a clone, so its `.git/config`,
hooks and attributes are someone else's input. Every call runs with no system or
global configuration, hooks pointed at nothing, no fsmonitor, no automatic gc, and
blobs written with `--no-filters`, so no clean/smudge filter, hook or monitor command
planted in the repository ever runs. Only plumbing is used for writing; nothing
touches the user's index or working tree settings.

A remote's git runs on the other side of a push or a fetch: for a folder remote git
starts `receive-pack` / `upload-pack` in that folder without passing our `-c` options
on, and over ssh under the remote's own configuration. `REMOTE_RECEIVE_PACK` and
`REMOTE_UPLOAD_PACK` are the commands to start there instead: the same switches on
their own command line, where the remote repository's config cannot override them
(command-line config wins), so no hook (`pre-receive`, `update`, `post-receive`,
`reference-transaction`, ...), `core.hooksPath` or `core.alternateRefsCommand` planted
in a remote runs as the member.

A git that talks to a remote runs bounded (`REMOTE_MEMORY`): a commit or tree is
inflated whole in memory by the sending pack-objects and the receiving index-pack, so
one hostile 300 MB commit message cost 292 MiB in them before the size caps of
registry/store/history.py could refuse it. Blobs over 1 MiB are streamed, git's own
caches are held small, and the heap (RLIMIT_DATA: anonymous memory, not the packs git
maps from disk) is capped for git and every process it starts; an object that needs
more fails the fetch, which the caller turns into one clean refusal.

The same switches guard a source tree read at seal time (registry/seal/sources.py),
which is someone else's too: no pager, credential helper, askpass, ssh command, `ext::`
transport or signature program configured anywhere runs, and the environment's `GIT_*`
variables (GIT_SSH, GIT_EXTERNAL_DIFF, GIT_PAGER, ...) are dropped. No git here reads
a working tree's files through git: a clean filter or fsmonitor cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from registry.errors import InvalidInput

SAFE_CONFIG = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false",
    "core.sshCommand=false", "gc.auto=0", "maintenance.auto=false", "core.autocrlf=false",
    "core.symlinks=false", "commit.gpgsign=false", "protocol.file.allow=always",
    "core.pager=cat", "credential.helper=", "core.askPass=", "protocol.ext.allow=never",
    "log.showSignature=false", "gpg.program=false",
)
REMOTE_MEMORY = 64 << 20
"""The heap a git fetch or push, and each process it starts, may use beyond what the
ledger's size calls for (`remote_heap`): objects under the caps of
registry/store/history.py with the small caches below fit; a hostile one does not."""
PER_OBJECT = 512
"""Heap per object the ledger holds: measured, pack-objects needs about 250 bytes for
each object it sends and index-pack about 150 for each it receives."""
MEMORY_ENV = "REGISTRY_GIT_MEMORY"
MEMORY_CONFIG = (
    "core.bigFileThreshold=1m", "core.deltaBaseCacheLimit=16m", "pack.windowMemory=16m",
    "pack.deltaCacheSize=16m", "pack.threads=1",
)
# What a remote's receive-pack / upload-pack runs under: no hooks, no command from the
# remote's config (true prints no refs: alternates are not advertised), no gc; its
# pack-objects bounded as ours.
# (uploadpack.packObjectsHook is read only from protected config, never a repository's.)
REMOTE_CONFIG = (*SAFE_CONFIG, *MEMORY_CONFIG, "core.alternateRefsCommand=true",
                 "receive.autogc=false")
REMOTE_RECEIVE_PACK = " ".join(["git", *(f"-c {c}" for c in REMOTE_CONFIG), "receive-pack"])
REMOTE_UPLOAD_PACK = " ".join(["git", *(f"-c {c}" for c in REMOTE_CONFIG), "upload-pack"])
IDENTITY = {"GIT_AUTHOR_NAME": "registry", "GIT_AUTHOR_EMAIL": "registry@localhost",
            "GIT_COMMITTER_NAME": "registry", "GIT_COMMITTER_EMAIL": "registry@localhost"}


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0",
               LC_ALL="C", GIT_PAGER="cat", GIT_ASKPASS="", SSH_ASKPASS="")
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


def try_git(repo: Path, *args: str, env: Mapping[str, str] | None = None,
            timeout: float | None = None, heap: int | None = None
            ) -> subprocess.CompletedProcess[bytes]:
    """One git command on `repo`, its exit status left to the caller (a fetch that finds
    no branch, a push the remote refuses, `merge-base --is-ancestor`); `heap` caps the
    memory of git and what it starts (RLIMIT_DATA, bytes)."""
    argv = git_args(repo, *args)
    if heap is not None:  # set by a shell that then becomes git: a forked Python child
        # would carry (and be charged) the registry's own pages until its exec
        argv = ["/bin/sh", "-c", f'ulimit -d {heap >> 10} && exec "$0" "$@"', *argv]
    return subprocess.run(argv, capture_output=True, env=git_env(env), timeout=timeout)


def remote_heap(repo: Path) -> int:
    """The heap cap of a git that talks to a remote from `repo`: REMOTE_MEMORY plus
    PER_OBJECT for each object `repo` holds (what a pull or push of a ledger of that
    size needs), or REGISTRY_GIT_MEMORY MiB when set (a first pull of a ledger of
    more than about 250,000 objects needs it). Sized from this side only: nothing the
    remote holds can raise it."""
    given = os.environ.get(MEMORY_ENV, "").strip()
    if given:
        if not given.isdigit() or int(given) < 16:
            raise InvalidInput(f"{MEMORY_ENV}={given!r}: not a number of MiB (16 or more)",
                               hint=f"e.g. {MEMORY_ENV}=512, or unset it")
        return int(given) << 20
    counted = dict(line.split(": ", 1) for line in
                   run_git(repo, "count-objects", "-v").decode().splitlines() if ": " in line)
    objects = int(counted.get("count", "0")) + int(counted.get("in-pack", "0"))
    return REMOTE_MEMORY + PER_OBJECT * objects


def out_of_memory(stderr: str) -> bool:
    """Whether a git under a heap cap failed for want of memory."""
    text = stderr.lower()
    return "out of memory" in text or "cannot allocate memory" in text


def open_repo(path: Path) -> Any:
    """A GitPython `Repo` of the tree at (or above) `path`, whose every git call runs
    with SAFE_CONFIG and the environment above; raises GitPython's own errors. GitPython
    reads a source tree's commit, branch and remote at seal time; no working file is
    read through it (registry/seal/sources.py hashes those itself)."""
    import git  # GitPython: only seal reads a source tree; read commands never load it

    repo = git.Repo(path, search_parent_directories=True)
    repo.git.update_environment(**{k: v for k, v in git_env().items()
                                   if k.startswith(("GIT_", "LC_"))})
    repo.git.set_persistent_git_options(c=list(SAFE_CONFIG))
    return repo


def git_text(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return run_git(repo, *args, env=env).decode("utf-8", errors="surrogateescape")


def object_sizes(repo: Path, tip: str, exclude: str | None = None) -> dict[str, tuple[str, int]]:
    """sha -> (type, size) of every object reachable from `tip` and not from `exclude`,
    read without reading any object's content (`rev-list --objects`, then `cat-file
    --batch-check`): how a pull bounds its work before it parses anything."""
    listed = run_git(repo, "rev-list", "--objects", tip, *(["--not", exclude] if exclude else []))
    shas = [line.split(b" ", 1)[0].decode() for line in listed.splitlines() if line]
    if not shas:
        return {}
    out = run_git(repo, "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)",
                  input="".join(f"{s}\n" for s in shas).encode())
    found: dict[str, tuple[str, int]] = {}
    for line in out.decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            found[parts[0]] = (parts[1], int(parts[2]))
    return found


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
