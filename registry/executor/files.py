"""Atomic writes for the run directory: a file is either whole or absent."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel


def write_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide run files from other readers
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_model(path: Path, model: BaseModel) -> None:
    """Readable, stable JSON: sorted keys, one-space indent, aliases (`schema`)."""
    data = model.model_dump(mode="json", by_alias=True)
    write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))
