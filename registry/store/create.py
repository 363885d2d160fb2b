"""Creating a home: its object folders, an empty ledger and the index tables."""

from __future__ import annotations

from pathlib import Path

from registry.store.home import Home, home_at
from registry.store.index import open_index
from registry.store.ledger import Ledger


def init_home(root: Path) -> Home:
    """Create (or complete) a home at `root`; idempotent."""
    home = home_at(root)
    (home.objects / "sha256").mkdir(parents=True, exist_ok=True)
    (home.objects / "tmp").mkdir(exist_ok=True)
    Ledger.init(home.ledger)
    open_index(home).create()
    return home
