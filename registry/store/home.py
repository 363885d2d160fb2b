"""The registry home: where objects, the ledger and the index live, and how it is found.

Found in this order: an explicit directory (`--home`), `$REGISTRY_HOME`, the nearest
`.registry/` walking up from the current directory (as git finds `.git`).
The index is `index.sqlite` in the home unless `$REGISTRY_DATABASE_URL` names another
database (e.g. `postgresql+psycopg://...`).
"""

import os
from pathlib import Path

from registry.base.model import Frozen
from registry.errors import NotFound

DIRNAME = ".registry"
ENV_HOME = "REGISTRY_HOME"
ENV_DATABASE = "REGISTRY_DATABASE_URL"
INIT_HINT = "run `registry init` in your project, or set REGISTRY_HOME"


class Home(Frozen):
    root: Path
    database_url: str

    @property
    def objects(self) -> Path:
        return self.root / "objects"

    @property
    def ledger(self) -> Path:
        return self.root / "ledger"

    @property
    def lock_file(self) -> Path:
        return self.root / "lock"


def home_at(root: Path) -> Home:
    root = root.resolve()
    url = os.environ.get(ENV_DATABASE) or f"sqlite:///{root / 'index.sqlite'}"
    return Home(root=root, database_url=url)


def is_home(path: Path) -> bool:
    return (path / "objects").is_dir() and (path / "ledger" / ".git").is_dir()


def find_home(explicit: Path | None = None, *, cwd: Path | None = None) -> Home:
    """The home to use, or NotFound saying how to create one."""
    given = explicit or (Path(os.environ[ENV_HOME]) if os.environ.get(ENV_HOME) else None)
    if given is not None:
        if not is_home(given):
            raise NotFound(f"{given}: not a registry home", hint=INIT_HINT)
        return home_at(given)
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if is_home(folder / DIRNAME):
            return home_at(folder / DIRNAME)
    raise NotFound(f"no registry home in {start} or any folder above it", hint=INIT_HINT)
