#!/usr/bin/env python3
"""Team, hostile remote: the memory a member spends refusing a pull that carries one
huge commit (issue 23: a 100 MB commit message cost 452 MiB, 300 MB cost 951 MiB).

A folder remote gets, from an outsider's plain-git clone, one commit whose message is
MB megabytes; a member pulls it. The pull runs in a child process that reports its own
peak RSS (ru_maxrss of RUSAGE_SELF: the registry's Python process) and that of its
largest child (RUSAGE_CHILDREN: git fetch and what it starts), and the pull's exit
code. Target: the registry process peaks under 100 MiB. Each member's pull is run
twice; the medians are printed with their spread.

Usage: tools/benchmarks/team_hostile.py [MB]   (default 300)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tools" / "benchmarks"
# this folder after the standard library: its queue.py would shadow `queue` (threads need it)
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != HERE), str(HERE)]

from ledgers import fill, new_home  # noqa: E402

from registry.signing.keys import signing_key  # noqa: E402
from registry.store.create import init_home  # noqa: E402
from registry.store.trust import pin_roots  # noqa: E402
from registry.team.remotes import add_remote  # noqa: E402
from registry.team.sync import create_remote, pull, push  # noqa: E402

MEASURED = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from registry.errors import RegistryError
from registry.store.home import home_at
from registry.team.remotes import get_remote
from registry.team.sync import pull
home = home_at(__import__("pathlib").Path(sys.argv[2]))
try:
    pull(home, get_remote(home, None))
    code = 0
except RegistryError as e:
    code = int(e.exit_code)
kib = lambda who: resource.getrusage(who).ru_maxrss
print(json.dumps({"code": code, "self_mib": kib(resource.RUSAGE_SELF) / 1024,
                  "children_mib": kib(resource.RUSAGE_CHILDREN) / 1024}))
"""


def hostile_commit(remote: Path, folder: Path, mb: int) -> None:
    clone = folder / "outsider"
    subprocess.run(["git", "clone", "-q", str(remote / "ledger.git"), str(clone)], check=True)
    message = folder / "message"
    with open(message, "wb") as f:
        for _ in range(mb):
            f.write(b"x" * 1_000_000)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=x", "-c", "user.email=x@x",
                    "commit", "-q", "--allow-empty", "-F", str(message)], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    with tempfile.TemporaryDirectory(prefix="registry-hostile-bench-") as tmp:
        folder = Path(tmp)
        a = new_home(folder / "a")
        fill(a, 2, payload=1000)
        b = init_home(folder / "b" / ".registry")
        pin_roots(b, [signing_key()[0]])
        for home in (a, b):
            remote = add_remote(home, "origin", str(folder / "remote"))
        create_remote(remote)
        push(a, remote)
        pull(b, remote)
        hostile_commit(folder / "remote", folder, mb)
        runs = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", MEASURED, str(ROOT), str(b.root)],
                                  capture_output=True, text=True, env=os.environ)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    own = sorted(r["self_mib"] for r in runs)
    kids = sorted(r["children_mib"] for r in runs)
    print(f"refusing a pull carrying a {mb} MB commit (exit {runs[0]['code']}, 2 runs): "
          f"registry process peak {own[0]:.0f}-{own[-1]:.0f} MiB (target < 100 MiB) "
          f"{'PASS' if own[-1] < 100 else 'FAIL'}; largest child (git) "
          f"{kids[0]:.0f}-{kids[-1]:.0f} MiB")


if __name__ == "__main__":
    main()
