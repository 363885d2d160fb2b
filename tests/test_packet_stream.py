"""A claim's packet is read as a stream: `registry claim import` of a packet holding a
4 MiB `.log` of numbers (none of them the claimed figure, so every one is looked at) peaks
at most twice the file's size above the same import of a one-line log, measured as the
process's own peak resident memory (ru_maxrss) in a fresh interpreter. Before, every
number was kept with its line label: 25 times the file."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
MIB = 1 << 20
PEAK = """
import resource, runpy, sys
sys.argv = ["registry", "claim", "import", sys.argv[1]]
try:
    runpy.run_module("registry", run_name="__main__")
except SystemExit as e:
    assert e.code in (0, None), e.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def _packet(folder: Path, claim: str, size: int) -> Path:
    folder.mkdir()
    (folder / "claim.json").write_text(json.dumps({
        "id": claim, "status": "submitted",
        "claimed": {"tok_s": 999.5, "metric": "median decode tok/s", "by": "someone"}}))
    rng = random.Random(0)
    with open(folder / "numbers.log", "w") as f:
        written = 0
        while written < size:
            line = " ".join(f"{rng.random() * 100:.3f}" for _ in range(16)) + "\n"
            written += f.write(line)
    return folder


def _peak(packet: Path) -> int:
    r = subprocess.run([sys.executable, "-c", PEAK, str(packet)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return int(r.stdout.strip().splitlines()[-1])


def test_a_large_log_in_a_packet_is_read_in_bounded_memory(store_home, tmp_path: Path
                                                           ) -> None:
    small = _peak(_packet(tmp_path / "small", "one-line", 10))
    size = 4 * MIB
    large = _peak(_packet(tmp_path / "large", "four-mib", size))
    assert large - small <= 2 * size, f"{(large - small) / MIB:.1f} MiB over the one-line import"


def test_a_huge_environment_dump_in_a_capsule_is_refused(cli, store_home, tmp_path: Path
                                                         ) -> None:
    """Its pairs go into the signed statement: 50,000 of them (2 MiB) are refused, naming
    the file, before anything is written."""
    capsule = tmp_path / "capsule"
    capsule.mkdir()
    (capsule / "server.log").write_text("hello\n")
    (capsule / "service-environment.txt").write_text(
        "".join(f"VAR_{i}=value {i} padded to forty bytes or so\n" for i in range(50_000)))
    r = cli("import", capsule)
    assert r.exit_code == 4 and "Traceback" not in r.stderr, r.stderr
    assert "service-environment.txt: more than 10,000 KEY=VALUE lines" in r.stderr
    assert json.loads(cli("list", "--json").stdout) == []
