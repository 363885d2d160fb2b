"""Named remotes, kept in the home (`remotes.json`), never in the ledger.

A remote is one folder, local or over SSH, holding a bare git repository
`ledger.git` and a content-addressed object folder `objects/` laid out as a home's
(`objects/sha256/<2 hex>/<62 hex>`). Its URL is `ssh://[user@]host[:port]/path`,
`file:///path` or an absolute path. The ledger's own `.git/config` is someone else's
input (docs/trust.md), so no remote is ever configured there: every fetch and push
names the URL itself.

The SSH command (`ssh` by default) is part of the remote's settings so that a key,
a port or a known-hosts file can be named per remote, as with `GIT_SSH_COMMAND`.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from pydantic import Field, ValidationError

from registry.base.files import write_model
from registry.base.model import Frozen
from registry.errors import InvalidInput, NotFound
from registry.store.home import Home

FILE = "remotes.json"
LEDGER = "ledger.git"
OBJECTS = "objects"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
HOST = re.compile(r"[A-Za-z0-9._-]+\Z")
USER = re.compile(r"[A-Za-z0-9._-]+\Z")
DEFAULT = "origin"


class Remote(Frozen):
    name: str
    url: str
    ssh_command: str = "ssh"

    @property
    def location(self) -> Location:
        return parse_url(self.url)


class Location(Frozen):
    """Where a remote lives: a local folder, or a folder on an SSH host."""

    path: str
    host: str | None = None
    user: str | None = None
    port: int | None = None

    @property
    def is_ssh(self) -> bool:
        return self.host is not None

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else str(self.host)

    def ledger_url(self) -> str:
        path = str(PurePosixPath(self.path) / LEDGER)
        if not self.is_ssh:
            return path
        port = f":{self.port}" if self.port else ""
        return f"ssh://{self.destination}{port}{path}"

    def objects_path(self) -> str:
        return str(PurePosixPath(self.path) / OBJECTS)


class Remotes(Frozen):
    remotes: dict[str, Remote] = Field(default_factory=dict)


def parse_url(url: str) -> Location:
    """A remote URL, refused unless it is ssh://, file:// or an absolute path (no other
    transport: git's `ext::` would run a command)."""
    if url.startswith("/"):
        return Location(path=_local(url))
    parts = urlsplit(url)
    if parts.scheme == "file" and parts.netloc in ("", "localhost") and parts.path.startswith("/"):
        return Location(path=_local(parts.path))
    if parts.scheme == "ssh" and parts.hostname and parts.path.startswith("/"):
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not HOST.match(parts.hostname) or (parts.username and not USER.match(parts.username)) \
                or port == -1 or parts.password or parts.query or parts.fragment:
            raise InvalidInput(f"{url!r}: not a usable ssh URL",
                               hint="ssh://[user@]host[:port]/absolute/path")
        if ".." in PurePosixPath(parts.path).parts or "\n" in parts.path:
            raise InvalidInput(f"{url!r}: the path may not contain '..' or newlines")
        return Location(path=str(PurePosixPath(parts.path)), host=parts.hostname,
                        user=parts.username, port=port)
    raise InvalidInput(f"{url!r}: a remote is ssh://[user@]host[:port]/path, file:///path or "
                       "an absolute path")


def _local(path: str) -> str:
    """A local remote's folder, refused when it holds `..` (docs/team.md): a URL names
    one folder, not a walk out of another."""
    if ".." in PurePosixPath(path).parts or "\n" in path or "\0" in path:
        raise InvalidInput(f"{path!r}: a remote path may not contain '..' or newlines",
                           hint="give the folder's absolute path")
    return str(PurePosixPath(path))


def path_of(home: Home) -> Path:
    return home.root / FILE


def load_remotes(home: Home) -> Remotes:
    path = path_of(home)
    try:
        return Remotes.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return Remotes()
    except (OSError, ValueError, ValidationError) as e:
        raise InvalidInput(f"{path}: not a remotes file ({str(e).splitlines()[0]})",
                           hint="fix or delete it, then registry remote add") from None


def add_remote(home: Home, name: str, url: str, ssh_command: str | None = None) -> Remote:
    if not NAME.match(name):
        raise InvalidInput(f"{name!r}: a remote name is letters, digits, '.', '_' or '-'")
    parse_url(url)
    if ssh_command is not None and not shlex.split(ssh_command):
        raise InvalidInput("--ssh-command is empty")
    remote = Remote(name=name, url=url, ssh_command=ssh_command or "ssh")
    current = load_remotes(home)
    write_model(path_of(home), Remotes(remotes={**current.remotes, name: remote}))
    return remote


def remove_remote(home: Home, name: str) -> None:
    current = load_remotes(home)
    if name not in current.remotes:
        raise NotFound(f"no remote named {name!r}", hint="registry remote list")
    rest = {k: v for k, v in current.remotes.items() if k != name}
    write_model(path_of(home), Remotes(remotes=rest))


def get_remote(home: Home, name: str | None) -> Remote:
    """The named remote; without a name, `origin`, else the only one."""
    remotes = load_remotes(home).remotes
    if name is None:
        name = DEFAULT if DEFAULT in remotes or len(remotes) != 1 else next(iter(remotes))
    if name not in remotes:
        raise NotFound(f"no remote named {name!r}" if remotes else "this home has no remote",
                       hint="registry remote add NAME URL")
    return remotes[name]
