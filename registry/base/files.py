"""File helpers: a JSON document read with one clear error; atomic writes.

Reads go through registry.base.safeload: size, depth and number limits, so a hostile file
gives one `InvalidInput` naming it, never a traceback.

A write leaves the file whole or absent, never half-written: the bytes go to a temp
file in the same directory (so the rename cannot cross filesystems), are fsynced,
then renamed over the target, and the directory is fsynced so the rename itself
survives a crash. A writer holds a `flock` on its temp file while it lives; a temp
file nobody holds, and that has not changed for `DEBRIS_AGE` seconds, is what a
killed writer left, and the next writer removes it (`clear_debris`). The object
store publishes its objects differently (temp files in `objects/tmp/`, read-only,
deduplicated, copied while hashed): see registry/store/objects.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from registry.base.safeload import MAX_BYTES, BadDocument, loads_json
from registry.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)
DEBRIS_AGE = 60.0  # seconds a temp file must be unchanged and unlocked to be debris


def read_bytes(path: Path, what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """A regular file's bytes (at most `max_bytes`), or one clear error naming it."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > max_bytes:
                raise InvalidInput(f"{path}: {what} is {size:,} bytes, over the "
                                   f"{max_bytes:,} byte limit")
            return f.read(max_bytes + 1)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: missing") from None
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read {what}: {e.strerror}") from None


def read_json_value(path: Path, what: str = "config") -> Any:
    """Any JSON value from `path`, or one clear error naming the file."""
    try:
        return loads_json(read_bytes(path, what))
    except BadDocument as e:
        raise InvalidInput(f"{path}: {what} is {e}",
                           hint="fix or replace the file") from None


def read_json(path: Path, what: str = "config") -> dict[str, Any]:
    """A JSON object from `path`, or one clear error naming the file."""
    value = read_json_value(path, what)
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {what} is not a JSON object")
    return value


def read_model(path: Path, model: type[M], what: str | None = None) -> M:
    """A JSON file parsed into `model`, or one clear error naming the file and the field."""
    value = read_json_value(path, what or path.name)
    try:
        return model.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(f"{path}: {where}: {first['msg']}") from None


def temp_file(directory: Path, prefix: str) -> tuple[int, Path]:
    """A new temp file (mode 0600) and its descriptor, locked while the writer lives."""
    fd, name = tempfile.mkstemp(prefix=prefix, dir=directory)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd, Path(name)


def clear_debris(directory: Path, prefix: str) -> list[Path]:
    """Remove the temp files under `prefix` that killed writers left; returns them.
    One a live writer holds (its lock), or one changed in the last DEBRIS_AGE seconds
    (a writer between creating and locking it), is left alone."""
    import glob  # only writers clear debris

    removed = []
    for path in directory.glob(f"{glob.escape(prefix)}*"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # gone already, a link, or not ours to read
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if time.time() - os.fstat(fd).st_mtime >= DEBRIS_AGE:
                path.unlink(missing_ok=True)
                removed.append(path)
        except OSError:
            pass  # held by a live writer
        finally:
            os.close(fd)
    return removed


def write_bytes(path: Path, data: bytes) -> None:
    prefix = f".{path.name}."
    clear_debris(path.parent, prefix)
    fd, tmp = temp_file(path.parent, prefix)
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
