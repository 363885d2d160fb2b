"""Write the same index rows into one index again and again, each round at a given
moment (tests/test_fleet_index.py starts two of these at once, as two homes pulling the
same records into one team index).

`python -m tests.put_many URL ENTRIES_JSON START_EPOCH ROUNDS STEP_S [reverse]`."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from registry.store.index import Index

    url, entries = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    start, rounds, step = float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    if sys.argv[6:] == ["reverse"]:
        entries.reverse()  # the other home met the records in another order
    index = Index(url)
    for n in range(rounds):
        while time.time() < start + n * step:
            time.sleep(0.001)
        index.put(entries)
        print(n, flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
