"""Seal N copies of the captured tiny-bf16-kv run into one home, starting at a given
time (tests/test_fleet_index.py starts two at once, on one PostgreSQL index).

`python -m tests.seal_many HOME N START_EPOCH`: prints each record id."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAPTURED = ROOT / "tests/data/cpu-runs/tiny-bf16-kv"


def main() -> None:
    from registry.seal import seal_run
    from registry.store.home import home_at

    root, n, start = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    runs = [shutil.copytree(CAPTURED, root.parent / f"run{i}") for i in range(n)]
    home = home_at(root)
    while time.time() < start:
        time.sleep(0.005)
    for run in runs:
        print(seal_run(run, home=home).id, flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
