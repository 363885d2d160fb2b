"""A launcher script that starts the engine (`engine.launcher`): where it is, its digest,
and what it printed about itself.

The lab's launchers print their settings as `key=value` lines, the engine's `--version`
and a `--- server ---` marker, then exec the engine: the lines before the marker are the
launcher's declared settings (the resolver holds them against the engine's own lines);
the whole output is the engine log.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from registry.base.files import write_bytes
from registry.base.hashing import sha256_file
from registry.errors import InvalidInput
from registry.formats.rundir import LauncherFacts, LaunchPlan

MARKER = "--- server ---"
SETTING = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
MAX_SETTINGS = 256
MAX_HEAD_LINES = 2000  # a launcher's preamble is short: never read a whole log for it


def launcher_path(declared: str, recipe_dir: Path) -> Path:
    """The launcher file (`declared` with its variables expanded; relative to the recipe's
    folder); it must be an executable file."""
    path = Path(os.path.expanduser(declared))
    path = path if path.is_absolute() else recipe_dir / path
    if not path.is_file():
        raise InvalidInput(f"engine.launcher: {path} is not a file",
                           hint="the path is relative to the recipe's folder")
    if not os.access(path, os.X_OK):
        raise InvalidInput(f"engine.launcher: {path} is not executable",
                           hint=f"chmod +x {path}")
    return path.resolve()


def printed_settings(log: Path) -> dict[str, str]:
    """The `key=value` lines before the `--- server ---` marker (none: no marker seen)."""
    settings: dict[str, str] = {}
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f):
                line = line.rstrip("\r\n")
                if line == MARKER:
                    return settings
                if n >= MAX_HEAD_LINES:
                    break
                match = SETTING.match(line)
                if match and len(settings) < MAX_SETTINGS:
                    settings[match["key"]] = match["value"]
    except OSError:
        return {}
    return {}


def keep_copy(launch: LaunchPlan, copy: Path) -> None:
    """The launcher's bytes as the run begins, kept in the run directory: sealed with
    the record, they let `reproduce` restore the launcher by its digest."""
    assert launch.launcher is not None
    try:
        data = Path(launch.launcher).read_bytes()
    except OSError as e:
        raise InvalidInput(f"engine.launcher: cannot read {launch.launcher} "
                           f"({e.strerror})") from None
    write_bytes(copy, data)


def launcher_facts(launch: LaunchPlan, log: Path, exit_code: int | None,
                   copy: Path | None = None) -> LauncherFacts:
    """What the launcher was: its digest is the kept copy's (the bytes when the run
    began), else the file's now."""
    assert launch.launcher is not None
    path = Path(launch.launcher)
    digest = sha256_file(copy if copy is not None and copy.is_file() else path)
    return LauncherFacts(path=str(path), sha256=digest, argv=launch.argv,
                         settings=printed_settings(log), exit_code=exit_code)
