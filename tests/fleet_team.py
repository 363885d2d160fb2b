"""A team for the fleet tests and the queue benchmark: the lead's home with one record
sealed on the scripted engine, pushed to a folder remote; worker homes that pin the
lead's root and pull it; worker processes (tests/fleet_worker.py) on any hardware
identity."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STALLED_S = 15.0
"""The lease: long enough that a niced worker on a shared 2-core machine (load 15 seen)
still renews it; the kill test waits this long after each kill."""


@dataclass
class Fleet:
    url: str
    root: Path
    keys: Path
    keyid: str
    remote: Path
    lead: Path
    record: str
    models: Path
    env: dict[str, str]

    def home(self, name: str) -> Path:
        """A worker host's home: the team's root pinned, the remote's ledger pulled."""
        from registry.cli.keys import pin_keys
        from registry.store.create import init_home
        from registry.team.remotes import add_remote, get_remote
        from registry.team.sync import pull

        home = init_home(self.root / name / ".registry")
        pin_keys(home, [self.keyid], 1)
        add_remote(home, "origin", str(self.remote))
        pull(home, get_remote(home, "origin"))
        return home.root

    def policy(self, **changes: object) -> dict[str, object]:
        """The lab's host policy with a test-sized storage reserve, its pid files, lane
        and hold in this fleet's own folder (one "host" for all its workers)."""
        host = self.root / "host"
        return {"reserve_gib": 0.01, "run_gib": 0.01, "lane_lock": str(host / "lane.lock"),
                "hold_file": str(host / "host-held.json"),
                "stop": {"pid_dir": str(host / "engines"), "grace_s": 10.0}, **changes}

    def start(self, name: str, hardware: str, **options: object) -> subprocess.Popen[str]:
        """A worker process named `name` on `hardware` (empty: the one its devices give),
        its home created on first use."""
        home = self.root / name / ".registry"
        if not home.exists():
            self.home(name)
        opts = {"url": self.url, "name": name, "hardware": hardware,
                "work_dir": str(self.root / name / "runs"),
                "remote": "origin", "heartbeat_s": 1.0, "stalled_s": STALLED_S,
                "policy": self.policy(), **options}
        extra = opts.pop("env", {})
        env = {**self.env, "REGISTRY_HOME": str(home), **extra}  # type: ignore[dict-item]
        if hardware:
            env["REGISTRY_FLEET_HARDWARE"] = hardware
        log = (self.root / f"{name}.log").open("a")
        return subprocess.Popen([sys.executable, "-m", "tests.fleet_worker", json.dumps(opts)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log,
                                text=True)


def build_fleet(root: Path, url: str) -> Fleet:
    """The lead's home (its key the team's root) with one record sealed on the scripted
    engine, pushed to `root/remote`. Sets REGISTRY_KEYS_DIR and REGISTRY_MODELS."""
    from registry.executor.run import run
    from registry.recipe import load_recipe
    from registry.seal import seal_run
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis
    from registry.team.remotes import add_remote, get_remote
    from registry.team.sync import create_remote, push
    from tests.fleet_worker import fleet_launcher
    from tests.test_ab import recipe_pair

    os.environ.pop("REGISTRY_DATABASE_URL", None)
    keys = root / "keys"
    os.environ["REGISTRY_KEYS_DIR"] = str(keys)
    key = create_key(keys)
    lead = init_home(root / "lead" / ".registry")
    genesis(lead, signing_key(keys))
    a, _, models = recipe_pair(root, "0.003")
    os.environ["REGISTRY_MODELS"] = str(models)
    run(load_recipe(Path(a)), root / "first", recipe_dir=Path(a).parent,
        recipe_file=Path(a), models_dir=models, launcher=fleet_launcher(models))
    record = seal_run(root / "first", home=lead, recipe_path=Path(a)).id
    remote = root / "remote"
    add_remote(lead, "origin", str(remote))
    create_remote(get_remote(lead, "origin"))
    push(lead, get_remote(lead, "origin"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(REGISTRY_KEYS_DIR=str(keys), REGISTRY_MODELS=str(models),
               PYTHONPATH=str(ROOT),
               REGISTRY_CONTAINER_SESSION=os.environ.get("REGISTRY_CONTAINER_SESSION", ""))
    if "REGISTRY_HASH_CACHE" in os.environ:
        env["REGISTRY_HASH_CACHE"] = os.environ["REGISTRY_HASH_CACHE"]
    return Fleet(url=url, root=root, keys=keys, keyid=key.keyid, remote=remote,
                 lead=lead.root, record=record, models=models, env=env)
