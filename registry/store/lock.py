"""One writer at a time per home: an advisory `flock` around index + ledger writes.

Hashing and object writes happen outside it (objects are content-addressed, so two
writers can store the same object safely); only the short index transaction and the
ledger commit are serialized. The kernel drops the lock when its holder dies, so a
crashed seal never leaves the home locked.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
