"""Objects to and from a remote's object folder: content-addressed, only what the other
side lacks is sent, every object checked against its name on arrival, interrupted
transfers resumed.

A folder remote is an `ObjectStore` of its own: `put_file` hashes while it copies, so
an object arrives under the digest of the bytes that were read, compared with the
name asked for. Over SSH, one `ssh` lists the remote folder (objects and partial
uploads), one `sftp` batch sends the missing objects to `tmp/<digest>.part`
(resuming a partial one with `put -a`), one `ssh` runs `sha256sum` on what arrived,
and one more `sftp` batch moves the objects that hash right into place and removes
the others. Fetching `get`s into the home's `objects/incoming/<digest>.part` (resumed
with `get -a`), hashes it here and publishes it only when it hashes to its name.
Four or two processes per transfer, whatever the number of objects.

A remote's object folder is someone else's input. A folder remote's object is opened
without following a link (`O_NOFOLLOW`, its shard folder too) and without blocking
(`O_NONBLOCK`, so a FIFO cannot hang the pull holding the home lock), must be a
regular file, and is read no further than the size it had when opened (a device such
as `/dev/zero` is not a regular file): anything else is refused by name, and what it
left in `incoming/` removed. Every ssh and sftp process has a timeout
(`REGISTRY_REMOTE_TIMEOUT`, seconds, default 600), so no wait holds the lock for ever.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shlex
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field

from registry.base.canonical import is_sha256
from registry.base.hashing import sha256_file
from registry.errors import InvalidInput, Unverifiable
from registry.store.objects import ObjectStore
from registry.team.remotes import Location, Remote

INCOMING = "incoming"
TIMEOUT_ENV = "REGISTRY_REMOTE_TIMEOUT"
CHUNK = 1 << 20


def remote_timeout() -> float:
    """Seconds one ssh, sftp or git process talking to a remote may take."""
    try:
        return max(1.0, float(os.environ.get(TIMEOUT_ENV, "600")))
    except ValueError:
        return 600.0


class TransferReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    objects: int = 0
    bytes: int = 0
    missing: list[str] = Field(default_factory=list, description="the source lacks these")
    corrupt: list[str] = Field(default_factory=list, description="arrived with other bytes")
    refused: dict[str, str] = Field(default_factory=dict,
                                    description="not a regular file on the source: what it is")


def object_remote(remote: Remote) -> ObjectRemote:
    loc = remote.location
    return SshObjects(loc, remote.ssh_command) if loc.is_ssh else FolderObjects(loc)


class ObjectRemote:
    def present(self) -> set[str]:
        raise NotImplementedError

    def send(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        raise NotImplementedError

    def fetch(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        raise NotImplementedError


class FolderObjects(ObjectRemote):
    def __init__(self, loc: Location) -> None:
        self.store = ObjectStore(Path(loc.objects_path()))

    def present(self) -> set[str]:
        return set(_walk(self.store.root / "sha256"))

    def send(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        (self.store.root / "sha256").mkdir(parents=True, exist_ok=True)
        self.store.tmp.mkdir(exist_ok=True)
        return _copy(store, self.store, digests)

    def fetch(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        return _copy(self.store, store, digests)


def _copy(source: ObjectStore, target: ObjectStore, digests: list[str]) -> TransferReport:
    """Each object copied into the target's `incoming/`, hashed as it is read, and
    published (one sync for all) only when it hashes to its name."""
    report = TransferReport()
    incoming = target.root / INCOMING
    incoming.mkdir(exist_ok=True)
    good = {}
    for digest in digests:
        path, part = source.path(digest), incoming / f"{digest}.part"
        try:
            size, again = _copy_hashing(path, part)
        except FileNotFoundError:
            report.missing.append(digest)
            continue
        except NotRegular as e:
            part.unlink(missing_ok=True)
            report.refused[digest] = str(e)
            continue
        if again != digest:
            part.unlink()
            report.corrupt.append(digest)
            continue
        good[digest] = part
        report.bytes += size
    target.adopt(good)
    report.objects = len(good)
    return report


class NotRegular(Exception):
    """An object path on a remote that is not a regular file: says what it is."""


def _copy_hashing(src: Path, dst: Path) -> tuple[int, str]:
    fd, limit = open_object(src)
    h, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as fin, open(dst, "wb") as fout:
        while size < limit and (chunk := fin.read(min(CHUNK, limit - size))):
            h.update(chunk)
            fout.write(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def open_object(path: Path) -> tuple[int, int]:
    """(descriptor, size) of a regular file, opened without following a link in its
    shard folder or its name and without blocking; NotRegular otherwise."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        shard = os.open(path.parent, flags | os.O_DIRECTORY)
    except OSError as e:
        raise _refusal(e, path.parent) from None
    try:
        fd = os.open(path.name, flags, dir_fd=shard)
    except OSError as e:
        raise _refusal(e, path) from None
    finally:
        os.close(shard)
    mode = os.fstat(fd)
    if not stat.S_ISREG(mode.st_mode):
        os.close(fd)
        raise NotRegular(f"{path} is {_what(mode.st_mode)}, not a regular file")
    return fd, mode.st_size


def _refusal(e: OSError, path: Path) -> Exception:
    if e.errno == errno.ENOENT:
        return FileNotFoundError(str(path))
    if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return NotRegular(f"{path} is a symbolic link, not a regular file")
    return NotRegular(f"{path} cannot be opened ({e.strerror})")


def _what(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a file")


def _walk(root: Path) -> Iterable[str]:
    if not root.is_dir():
        return
    for shard in os.scandir(root):
        if shard.is_dir() and len(shard.name) == 2:
            for entry in os.scandir(shard.path):
                if is_sha256(digest := shard.name + entry.name):
                    yield digest


class SshObjects(ObjectRemote):
    def __init__(self, loc: Location, ssh_command: str) -> None:
        self.loc = loc
        self.root = PurePosixPath(loc.objects_path())
        argv = shlex.split(ssh_command)
        self.ssh = [*argv, *(["-p", str(loc.port)] if loc.port else []), loc.destination]
        options = ["-P" if a == "-p" else a for a in argv[1:]]
        self.sftp = ["sftp", "-q", "-S", argv[0], *options,
                     *(["-P", str(loc.port)] if loc.port else []), "-b", "-", loc.destination]

    def _run(self, argv: list[str], data: bytes, what: str) -> str:
        try:
            done = subprocess.run(argv, input=data, capture_output=True,
                                  timeout=remote_timeout())
        except subprocess.TimeoutExpired:
            raise Unverifiable(f"{self.loc.destination}: {what} timed out after "
                               f"{remote_timeout():.0f} s", hint=f"{TIMEOUT_ENV} sets the "
                               "limit; an interrupted transfer resumes when run again") from None
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()
            raise Unverifiable(f"{self.loc.destination}: {what} failed "
                               f"({why[-1] if why else done.returncode})",
                               hint="check the remote URL and --ssh-command (registry remote "
                                    "list); an interrupted transfer resumes when run again")
        return done.stdout.decode(errors="replace")

    def _shell(self, script: str, data: bytes = b"", what: str = "ssh") -> str:
        return self._run([*self.ssh, script], data, what)

    def _batch(self, lines: list[str], what: str) -> None:
        if lines:
            self._run(self.sftp, "".join(f"{line}\n" for line in lines).encode(), what)

    def _listing(self) -> tuple[set[str], dict[str, int]]:
        root = shlex.quote(str(self.root))
        # NUL-separated, the size before the name: a file name can hold any byte but NUL
        out = self._shell(f"cd {root} 2>/dev/null || exit 0; "
                          "find sha256 -mindepth 2 -maxdepth 2 -type f -printf '%P\\0'; "
                          "find tmp -maxdepth 1 -type f -name '*.part' -printf 'part %s %f\\0'; "
                          "true", what="listing the remote objects")
        present, partial = set(), {}
        for entry in filter(None, out.split("\0")):
            if entry.startswith("part "):
                size, _, name = entry[5:].partition(" ")
                if is_sha256(digest := name.removesuffix(".part")) and size.isdigit():
                    partial[digest] = int(size)
            elif is_sha256(digest := entry.replace("/", "", 1)):
                present.add(digest)
        return present, partial

    def present(self) -> set[str]:
        return self._listing()[0]

    def send(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        report = TransferReport()
        _, partial = self._listing()
        root, tmp = self.root, self.root / "tmp"
        ready = [d for d in digests if store.path(d).is_file()]
        report.missing = [d for d in digests if d not in set(ready)]
        shards = sorted({d[:2] for d in ready})
        lines = [f"-mkdir {_q(p)}" for p in (root.parent, root, tmp, root / "sha256")]
        lines += [f"-mkdir {_q(root / 'sha256' / s)}" for s in shards]
        lines += [f"put {'-a ' if d in partial else ''}{_q(store.path(d))} {_q(tmp / f'{d}.part')}"
                  for d in ready]
        self._batch(lines, "sending objects")
        names = "".join(f"{d}.part\0" for d in ready).encode()
        sums = self._shell(f"cd {shlex.quote(str(tmp))} && xargs -0 -r sha256sum --", names,
                           "checking the objects sent") if ready else ""
        arrived = {name.removesuffix(".part"): digest for digest, name in
                   (line.split(maxsplit=1) for line in sums.splitlines() if " " in line)}
        good = [d for d in ready if arrived.get(d) == d]
        report.corrupt = [d for d in ready if arrived.get(d) != d]
        moves = [x for d in good for x in (f"chmod 444 {_q(tmp / f'{d}.part')}",
                                           f"-rename {_q(tmp / f'{d}.part')} {_q(_dest(root, d))}")]
        moves += [f"-rm {_q(tmp / f'{d}.part')}" for d in report.corrupt]
        self._batch(moves, "placing the objects sent")
        report.objects = len(good)
        report.bytes = sum(store.path(d).stat().st_size for d in good)
        return report

    def fetch(self, store: ObjectStore, digests: list[str]) -> TransferReport:
        report = TransferReport()
        incoming = store.root / INCOMING
        incoming.mkdir(exist_ok=True)
        parts = {d: incoming / f"{d}.part" for d in digests}
        self._batch([f"-get {'-a ' if parts[d].exists() else ''}{_q(_dest(self.root, d))} "
                     f"{_q(parts[d])}" for d in digests], "fetching objects")
        good = {}
        for digest, part in parts.items():
            if not part.is_file():
                report.missing.append(digest)
            elif sha256_file(part) != digest:
                part.unlink()
                report.corrupt.append(digest)
            else:
                good[digest] = part
                report.bytes += part.stat().st_size
        store.adopt(good)
        report.objects = len(good)
        return report


def _dest(root: PurePosixPath, digest: str) -> PurePosixPath:
    return root / "sha256" / digest[:2] / digest[2:]


def _q(path: object) -> str:
    """A path for an sftp batch line: quoted, and refused if it could break the line."""
    text = str(path)
    if any(c in text for c in "\n\r\0\""):
        raise InvalidInput(f"{text!r}: a path with quotes or newlines cannot be sent")
    return f'"{text}"'
