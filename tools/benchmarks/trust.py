#!/usr/bin/env python3
"""Trust: what the checks cost, on a ledger of 10,000 records with a signed history of
10,001 commits (one per record, as `seal` makes them).

- `registry verify --all` (keyring, every commit's signature, every record's signature,
  artifacts re-hashed, index rows compared): target <= 10 s wall on 2 cores;
- `registry list --limit 20` with every shown record's signature checked: target
  <= 0.3 s wall, against the bare Python start-up measured in the same run;
- `seal` of a small run with signed commits, against the same seal by the registry
  before this change (commit BASELINE, checked out into a temp worktree): target within
  10%.

The ledger is built by tools/benchmarks/ledgers.py, exactly as `seal` would leave it.
Usage: tools/benchmarks/trust.py [N]   (default 10000)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))

from ledgers import fill, new_home  # noqa: E402

BASELINE = "c538f09"
REGISTRY = [sys.executable, "-m", "registry"]


def wall(args: list[str], repeat: int = 3, env: dict[str, str] | None = None) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                       env=env)
        times.append(time.perf_counter() - start)
    return times


def seal_time(code_root: Path, folder: Path) -> list[float]:
    """Wall times of sealing one small run with the registry at `code_root`."""
    script = f"""
import os, sys, time, json
sys.path.insert(0, {str(code_root)!r})
from pathlib import Path
try:  # the baseline's layout: registry/identity.py
    from registry.identity import Evidence, ResolvedField, ResolvedIdentity, Status
except ImportError:
    from registry.formats.identity import Evidence, ResolvedField, ResolvedIdentity, Status
def identity(i):
    ev = [Evidence(source="server.log", line=1, text="...")]
    return ResolvedIdentity(fields={{name: ResolvedField(declared=v, resolved=v, evidence=ev,
                                                        status=Status.confirmed)
                                     for name, v in (("precision.kv_cache", "bfloat16"),
                                                     ("parallel.tensor", 1 + i % 2))}})
try:
    from registry.store.create import init_home
    import registry.signing.keys as keys
except ImportError:  # the baseline's layout: store/home.py and store/keys.py
    from registry.store.home import init_home
    import registry.store.keys as keys
create_key, signing_key = keys.create_key, keys.signing_key
folder = Path({str(folder)!r})
os.environ["REGISTRY_KEYS_DIR"] = str(folder / "keys")
key = create_key(folder / "keys")
home = init_home(folder / ".registry")
if hasattr(keys, "trust"):
    keys.trust(home, key.public_pem.encode(), "k")
else:
    from registry.store.trust import genesis
    genesis(home, signing_key())
from registry.seal import seal_resolved
run = folder / "run"
run.mkdir()
(run / "server.log").write_text("INFO engine started\\n" * 1000)
(run / "outputs.txt").write_text("x" * 10000)
times = []
for i in range(8):
    (run / "n.txt").write_text(str(i))
    start = time.perf_counter()
    seal_resolved(run, home=home, identity=identity(i), recipe=None)
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    import json

    return list(json.loads(out.strip().splitlines()[-1]))[2:]  # the first two warm caches


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        home = new_home(folder / "big")
        start = time.perf_counter()
        fill(home, n)
        print(f"built a ledger of {n} records, {n + 1} signed commits, in "
              f"{time.perf_counter() - start:.1f} s")
        reindex = wall([*REGISTRY, "reindex"], repeat=1)[0]
        print(f"reindex (history, signatures, then rows): {reindex:.2f} s")
        verify = wall([*REGISTRY, "verify", "--all"], repeat=1)[0]
        print(f"verify --all over {n} records: {verify:.2f} s (target <= 10 s)")
        python = min(wall([sys.executable, "-c", "pass"], repeat=5))
        listing = wall([*REGISTRY, "list", "--limit", "20"], repeat=5)
        print(f"list --limit 20, signatures checked: best {min(listing):.3f} s, median "
              f"{statistics.median(listing):.3f} s (target <= 0.3 s; bare python "
              f"{python:.3f} s)")
        base = folder / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base),
                        BASELINE], check=True)
        try:
            old = seal_time(base, folder / "old")
            new = seal_time(ROOT, folder / "new")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=True)
        ratio = statistics.median(new) / statistics.median(old)
        print(f"seal of a small run: median {statistics.median(new) * 1000:.0f} ms now vs "
              f"{statistics.median(old) * 1000:.0f} ms at {BASELINE} (ratio {ratio:.2f}, "
              f"spread now {min(new) * 1000:.0f}-{max(new) * 1000:.0f} ms, before "
              f"{min(old) * 1000:.0f}-{max(old) * 1000:.0f} ms; target <= 1.10)")


if __name__ == "__main__":
    main()
