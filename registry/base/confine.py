"""Paths that cannot escape their folder.

A run directory, a capsule or a record is someone else's input: a symlink in it may
point at `/etc/passwd` or a private key, and a path read from it may say `../../x`.
Everything the registry reads from such a folder is listed by `regular_files`, which
never follows a link out; every path taken from a record goes through `inside`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from registry.errors import InvalidInput


def inside(base: Path, relative: str) -> Path:
    """`base / relative`, refused unless it stays within `base` (links resolved)."""
    root = base.resolve()
    target = (root / relative).resolve()
    if relative.startswith("/") or not target.is_relative_to(root) or target == root:
        raise InvalidInput(f"{relative!r}: a path from a record must stay inside its folder",
                           hint="the record is malformed or hostile; it is not used")
    return target


def regular_files(folder: Path) -> list[Path]:
    """Every regular file under `folder`, sorted; a link that leads out of it, or to
    anything but a regular file or folder, is refused naming it."""
    root = folder.resolve()
    found = []
    for parent, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(parent) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                _check_link(root, path)
                if path.is_file():
                    found.append(path)
            elif stat.S_ISREG(mode):
                found.append(path)
            elif not stat.S_ISDIR(mode):
                raise InvalidInput(f"{path}: not a regular file (a device, socket or pipe)",
                                   hint="a run directory holds only files and folders")
    return sorted(found)


def _check_link(root: Path, path: Path) -> None:
    target = path.resolve()
    if not target.is_relative_to(root):
        raise InvalidInput(f"{path}: a symbolic link out of {root} (to {target})",
                           hint="copy the file in, or remove the link: nothing outside the "
                                "folder is sealed")
    if target.is_dir():
        raise InvalidInput(f"{path}: a symbolic link to a folder",
                           hint="a run directory holds only files and folders")
