"""File helpers: a JSON object read with one clear error; atomic writes.

A write leaves the file whole or absent, never half-written: the bytes go to a temp
file in the same directory (so the rename cannot cross filesystems), are fsynced,
then renamed over the target, and the directory is fsynced so the rename itself
survives a crash. The object store publishes its objects differently (temp files in
`objects/tmp/`, read-only, deduplicated, copied while hashed): see
registry/store/objects.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from registry.errors import InvalidInput


def read_json(path: Path, what: str = "config") -> dict[str, Any]:
    """A JSON object from `path`, or one clear error naming the file."""
    try:
        value = json.loads(path.read_bytes())
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read {what}: {e.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInput(f"{path}: {what} is not valid JSON ({e})",
                           hint="fix or replace the file") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {what} is not a JSON object")
    return value


def write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the file from other readers
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_model(path: Path, model: BaseModel) -> None:
    """Readable, stable JSON: sorted keys, one-space indent, aliases (`schema`)."""
    data = model.model_dump(mode="json", by_alias=True)
    write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def fsync_dir(path: Path) -> None:
    """Make a rename or a new entry in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
