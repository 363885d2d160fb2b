"""Content-addressed artifact store: `objects/sha256/<2 hex>/<62 hex>`.

Writes are atomic: the bytes go to a temp file under `objects/tmp/` (same
filesystem), are fsynced, then renamed into place and the shard directory fsynced.
What a killed writer left in `objects/tmp/` is removed by the next store's first
write (registry.base.files.clear_debris: only files no live writer holds).
A reader therefore sees a whole object or none. Objects are deduplicated by digest
and stored read-only; a corrupt object (bytes that no longer hash to their name) is
detected whenever it is checked.

A file is hashed and copied at the same time (the copy runs in the kernel via
`copy_file_range` on a second thread), so storing costs about one hash, not a hash
plus a copy. A source that changes while it is being stored is refused.
"""

import errno
import hashlib
import os
import threading
from enum import StrEnum
from pathlib import Path

from registry.base.files import clear_debris, fsync_dir, temp_file
from registry.base.hashing import Progress
from registry.base.model import Frozen
from registry.errors import InvalidInput

CHUNK = 64 << 20
TEMP_PREFIX = "tmp"
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM}


class StoredObject(Frozen):
    sha256: str
    size: int


class ObjectState(StrEnum):
    ok = "ok"
    missing = "missing"
    corrupt = "corrupt"


class ObjectStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self._cleared = False

    def _temp(self) -> tuple[int, Path]:
        if not self._cleared:
            clear_debris(self.tmp, TEMP_PREFIX)
            self._cleared = True
        return temp_file(self.tmp, TEMP_PREFIX)

    def path(self, digest: str) -> Path:
        return self.root / "sha256" / digest[:2] / digest[2:]

    def put_bytes(self, data: bytes) -> StoredObject:
        digest = hashlib.sha256(data).hexdigest()
        if not self._present(digest, len(data)):
            fd, tmp = self._temp()
            try:
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._publish(tmp, digest)
        return StoredObject(sha256=digest, size=len(data))

    def put_file(self, src: Path, progress: Progress | None = None) -> StoredObject:
        before = _fingerprint(src)
        fd, tmp = self._temp()
        try:
            digest, copied = self._hash_and_copy(src, fd, before[0], progress)
            if _fingerprint(src) != before:
                raise InvalidInput(f"{src}: changed while being stored",
                                   hint="seal a finished run; nothing may write to it meanwhile")
        except BaseException:
            os.close(fd)
            tmp.unlink()
            raise
        os.close(fd)
        if copied and tmp.stat().st_size == before[0]:
            self._publish(tmp, digest)
        else:
            tmp.unlink()
        return StoredObject(sha256=digest, size=before[0])

    def _hash_and_copy(self, src: Path, fd: int, size: int,
                       progress: Progress | None) -> tuple[str, bool]:
        """Hash `src` while a second thread copies it into `fd`; the copy stops early
        when the object already exists. Returns (digest, whole copy made)."""
        from concurrent.futures import ThreadPoolExecutor  # writers only: `show` reads

        from registry.base.hashing import sha256_file

        stop = threading.Event()
        with ThreadPoolExecutor(1) as pool:
            copy = pool.submit(_copy_file, src, fd, stop)
            try:
                digest = sha256_file(src, progress)
            except BaseException:
                stop.set()
                raise
            if self._present(digest, size):
                stop.set()  # deduplicated: no need to finish the copy
            return digest, copy.result()

    def adopt(self, files: dict[str, Path]) -> None:
        """Move files already checked to hash to their digests (on this file system)
        into place, then make them all durable with one `sync` (an fsync per object
        costs a journal commit each: most of a pull of thousands of objects)."""
        for digest, path in files.items():
            final = self.path(digest)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(path, 0o444)
            os.replace(path, final)
        if files:
            os.sync()

    def state(self, digest: str) -> ObjectState:
        from registry.base.hashing import sha256_file

        path = self.path(digest)
        if not path.is_file():
            return ObjectState.missing
        return ObjectState.ok if sha256_file(path) == digest else ObjectState.corrupt

    def _present(self, digest: str, size: int) -> bool:
        path = self.path(digest)
        return path.is_file() and path.stat().st_size == size

    def _publish(self, tmp: Path, digest: str) -> None:
        final = self.path(digest)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(tmp, 0o444)
        os.replace(tmp, final)  # same content either way if another writer won the race
        fsync_dir(final.parent)


def _fingerprint(path: Path) -> tuple[int, int, int]:
    try:
        st = path.stat()
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read ({e.strerror})") from None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _copy_file(src: Path, dst: int, stop: threading.Event) -> bool:
    """Copy `src` into the descriptor `dst`; False if stopped early."""
    with open(src, "rb", buffering=0) as f:
        while not stop.is_set():
            try:
                n = os.copy_file_range(f.fileno(), dst, CHUNK)
            except OSError as e:
                if e.errno not in _NO_KERNEL_COPY:
                    raise
                n = _write_all(dst, f.read(1 << 20))  # user-space fallback
            if n == 0:
                os.fsync(dst)  # here, so the flush to disk overlaps the hashing
                return True
    return False


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return len(data)
