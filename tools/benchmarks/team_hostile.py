#!/usr/bin/env python3
"""Team, hostile remote: the memory a member spends refusing a pull that carries one
huge commit (issue 23: a 100 MB commit message cost 452 MiB, 300 MB cost 951 MiB; then
the registry process 71 MiB and git's fetch 292 MiB).

A folder remote gets, from an outsider's plain-git clone, one commit whose message is
MB megabytes; a member pulls it. The pull runs in a child process that reports its own
peak RSS (ru_maxrss of RUSAGE_SELF: the registry's Python process), the peak of every
git it starts, and the pull's exit code. Each git is measured by /usr/bin/time around
it (git's own peak and that of everything git waits for: upload-pack, pack-objects,
index-pack): RUSAGE_CHILDREN cannot tell, since a child Python starts with vfork is
charged the registry's own pages until it execs. Target: each process under 100 MiB.

Each tree given (default: this one) pulls in turn, alternated, REPEATS times; the
medians are printed with their spread.

Usage: tools/benchmarks/team_hostile.py [MB] [--tree DIR]...   (default 300, this tree)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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

REPEATS = 3
MEASURED = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import registry.store.git as g
from registry.errors import RegistryError
from registry.store.home import home_at
from registry.team.remotes import get_remote
from registry.team.sync import pull
plain = g.git_args
g.git_args = lambda repo, *a: ["/usr/bin/time", "-a", "-o", sys.argv[3], "-f", "%M",
                               *plain(repo, *a)]
home = home_at(__import__("pathlib").Path(sys.argv[2]))
try:
    pull(home, get_remote(home, None))
    code = 0
except RegistryError as e:
    code = int(e.exit_code)
    sys.stderr.write(e.message[:300].replace(chr(10), " ") + chr(10))
print(json.dumps({"code": code,
                  "self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(tree: Path, home: Path, folder: Path) -> dict[str, float]:
    log = folder / "git-rss.txt"
    log.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", MEASURED, str(tree), str(home), str(log)],
                          capture_output=True, text=True, env=os.environ)
    if not done.stdout.strip():
        raise SystemExit(f"{tree}: the pull printed nothing:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    kib = [int(line) for line in log.read_text().split() if line.isdigit()]
    out["git_mib"] = max(kib) / 1024
    out["message"] = done.stderr.strip().splitlines()[0] if done.stderr.strip() else ""
    return out


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
    parser = argparse.ArgumentParser()
    parser.add_argument("mb", type=int, nargs="?", default=300)
    parser.add_argument("--tree", type=Path, action="append", help="a registry checkout")
    args = parser.parse_args()
    trees = args.tree or [ROOT]
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
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
        hostile_commit(folder / "remote", folder, args.mb)
        for _ in range(REPEATS):
            for tree in trees:
                runs[tree].append(measure(tree, b.root, folder))
    print(f"refusing a pull carrying a {args.mb} MB commit ({REPEATS} runs each, alternated; "
          "target: every process < 100 MiB)")
    for tree, got in runs.items():
        own = [r["self_mib"] for r in got]
        git = [r["git_mib"] for r in got]
        ok = max(own) < 100 and max(git) < 100
        print(f"  {tree}: exit {got[0]['code']}; registry process {statistics.median(own):.0f} "
              f"MiB ({min(own):.0f}-{max(own):.0f}); largest git {statistics.median(git):.0f} "
              f"MiB ({min(git):.0f}-{max(git):.0f}) {'PASS' if ok else 'FAIL'}\n"
              f"    {got[0]['message'][:160]}")


if __name__ == "__main__":
    main()
