"""The capsule's own files: every regular file under it, and never a link out of it.

A symbolic link anywhere in a capsule is refused, naming it: following one could seal
a file from outside the capsule (a private key, /etc/passwd) into a signed record, and
a link inside the capsule would seal the same bytes under two names.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from registry.errors import InvalidInput

MAX_FILES = 100_000


def capsule_files(capsule: Path) -> list[str]:
    """Sorted POSIX paths of the regular files under `capsule`, relative to it."""
    if capsule.is_symlink() or not capsule.is_dir():
        raise InvalidInput(f"{capsule}: not a capsule folder")
    found: list[str] = []
    for top, dirs, names in os.walk(capsule, onerror=_unreadable):
        for name in sorted([*dirs, *names]):
            path = Path(top) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise InvalidInput(
                    f"{path}: a symbolic link (to {os.readlink(path)}) in the capsule",
                    hint="a capsule holds its own files: copy the target in, or remove the link")
            if name in names and not stat.S_ISREG(mode):
                raise InvalidInput(f"{path}: not a regular file")
            if name in names:
                found.append(path.relative_to(capsule).as_posix())
        if len(found) > MAX_FILES:
            raise InvalidInput(f"{capsule}: more than {MAX_FILES:,} files: not one capsule",
                               hint="import its capsules one by one, or a folder of them")
    return sorted(found)


def inside(capsule: Path, given: Path, what: str) -> str:
    """`given` (a hand-pointed file) as a capsule path; refused outside the capsule."""
    real, root = given.resolve(), capsule.resolve()
    if given.is_symlink() or not real.is_file() or not real.is_relative_to(root):
        raise InvalidInput(f"{given}: {what} must be a file inside the capsule {capsule}")
    return real.relative_to(root).as_posix()


def load_json(path: Path) -> Any:
    """A capsule file's JSON value, or None when it is not JSON (never an error: the lab's
    files are read for what they say, and one that says nothing is skipped)."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _unreadable(error: OSError) -> None:
    raise InvalidInput(f"{error.filename}: cannot read ({error.strerror})")
