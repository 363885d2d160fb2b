"""One writer at a time per home: an advisory `flock` around index + ledger writes.

Hashing and object writes happen outside it (objects are content-addressed, so two
writers can store the same object safely); only the short index transaction and the
ledger commit are serialized. The kernel drops the lock when its holder dies, so a
crashed seal never leaves the home locked.

The lock is re-entrant within one thread: a function that needs it (a reader moving
the pin forward) may be called by one that already holds it (a pull), without
deadlocking on its own `flock`.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_held = threading.local()  # lock files this thread holds


@contextmanager
def exclusive(lock_file: Path) -> Iterator[None]:
    held: set[str] = _held.__dict__.setdefault("paths", set())
    key = os.path.abspath(lock_file)
    if key in held:
        yield
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(key)
        yield
    finally:
        held.discard(key)
        os.close(fd)  # closing the descriptor releases the lock
