#!/usr/bin/env python3
"""Start-up of the read commands over a home of 10,000 records, against a bare Python
start measured alternately in the same run (issue 21's targets):

- `registry list` (20 shown of 10,000, every shown signature checked): median wall
  <= 8x `python -c "import sqlite3, json"`;
- `registry show PREFIX`: <= 8x;
- `registry --help`, for the record;
- with `--before TREE` (a checkout of an earlier registry, e.g. main), the same
  commands run from that tree too, in the same rounds: before and after side by side;
- with `--verify`, `registry verify --all` of the 10,000 records with their full
  signed history (target <= 10 s wall), from each tree.

Every command is a fresh process, run in rounds (baseline, then each command, in
turn), so a busy machine slows all of them alike; each line gives the median wall
time with its spread (min-max), the median CPU time (the process and its git
children: what the work costs when the wall time is inflated by other load), and the
ratio of the medians to the baseline's. Byte-code is cached under a temporary
PYTHONPYCACHEPREFIX for every tree, and each command runs once before timing, so no
tree pays for compiling its sources.

    .venv/bin/python tools/benchmarks/startup.py [--home DIR] [--before TREE] [--verify]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))

BASELINE = ("python -c 'import sqlite3, json'", [sys.executable, "-c", "import sqlite3, json"])
TARGET = 8.0


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU counts the process and the children it waited
    for (git). It runs in the filesystem root: `python -m` puts the working directory
    first on sys.path, which would shadow the tree that PYTHONPATH names."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd="/")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rounds(commands: dict[str, tuple[list[str], dict[str, str]]], n: int,
           warm: bool = True) -> dict[str, list[tuple[float, float]]]:
    """Each command n times, alternately, after one untimed run of each (`warm`)."""
    for argv, env in commands.values() if warm else ():
        timed(argv, env)
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(n):
        for name, (argv, env) in commands.items():
            out[name].append(timed(argv, env))
    return out


def report(results: dict[str, list[tuple[float, float]]], base: str,
           target: float | None) -> None:
    wall0 = statistics.median(w for w, _ in results[base])
    cpu0 = statistics.median(c for _, c in results[base])
    for name, runs in results.items():
        walls = [w for w, _ in runs]
        wall, cpu = statistics.median(walls), statistics.median(c for _, c in runs)
        goal = "" if name == base or target is None else (
            f"  {'ok' if wall / wall0 <= target else 'OVER'} (target <= {target:g}x)")
        print(f"{name:<44} wall {wall:6.3f} s ({min(walls):.3f}-{max(walls):.3f})  "
              f"{wall / wall0:5.1f}x   CPU {cpu:6.3f} s {cpu / cpu0:5.1f}x{goal}", flush=True)


def env_for(tree: Path, home: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(cache), REGISTRY_HOME=str(home),
               REGISTRY_KEYS_DIR=str(home.parent / "keys"), COLUMNS="80")
    env.pop("REGISTRY_DATABASE_URL", None)
    return env


def build_home(folder: Path, n: int) -> Path:
    from ledgers import fill, new_home

    from registry.store.reindex import reindex

    start = time.perf_counter()
    home = new_home(folder)
    fill(home, n)
    reindex(home)
    print(f"built a home of {n:,} records in {time.perf_counter() - start:.0f} s", flush=True)
    return home.root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a home of 10,000 records to reuse "
                                                  "(default: built here, minutes)")
    parser.add_argument("--before", type=Path, help="an earlier tree to compare")
    parser.add_argument("--verify", action="store_true", help="also time verify --all")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="registry-bench-startup-") as tmp:
        folder = Path(tmp)
        home = args.home.resolve() if args.home else build_home(folder / "home", 10_000)
        trees = {"": ROOT, **({" (before)": args.before.resolve()} if args.before else {})}
        from registry.store.ledger import committed_ids

        prefix = committed_ids(home / "ledger")[1234][:10]
        python = sys.executable
        commands = {BASELINE[0]: (BASELINE[1], env_for(ROOT, home, folder / "pyc"))}
        for label, tree in trees.items():
            env = env_for(tree, home, folder / "pyc")
            for name, argv in (("registry list --limit 20", ["list", "--limit", "20"]),
                               ("registry show PREFIX", ["show", prefix]),
                               ("registry --help", ["--help"])):
                commands[name + label] = ([python, "-m", "registry", *argv], env)
        load = os.getloadavg()[0]
        print(f"{args.rounds} rounds; load average {load:.1f} on {os.cpu_count()} CPUs",
              flush=True)
        report(rounds(commands, args.rounds), BASELINE[0], TARGET)
        if args.verify:
            verify = {f"registry verify --all{label}": (
                [python, "-m", "registry", "verify", "--all"], env_for(tree, home, folder / "pyc"))
                for label, tree in trees.items()}
            results = rounds(verify, 3, warm=False)
            for name, runs in results.items():
                walls = [w for w, _ in runs]
                print(f"{name:<44} wall {statistics.median(walls):6.2f} s "
                      f"({min(walls):.2f}-{max(walls):.2f})  CPU "
                      f"{statistics.median(c for _, c in runs):6.2f} s  (target <= 10 s wall)",
                      flush=True)


if __name__ == "__main__":
    main()
