"""Keep a GPU job's evidence as test data: small files only, byte for byte.

    python3 tools/gpu/capture.py RESULTS DEST

RESULTS is what the kit's device-collect.sh packed (console.tar.gz, runs.tar.gz,
compare.tar.gz, ...; .tar.xz when a pack was large) or an unpacked work folder; DEST a
folder under tests/data/gpu-runs/. Kept: every run directory (server.log, bench.json,
launch.json, environment.json, status.json, recipe, metrics, suites), and from logs/ the
resolve JSON per run, the checkpoints' small files and `registry inspect` JSON, the
reproduce verdicts, the records as shown there (`show --json`), figures.txt,
nvidia-smi.txt, project.txt, records.txt, failed.txt; compare/agreement.json; `smi.csv`,
a job's own GPU sampling when it kept one. A file over MAX_BYTES is left out and named
in CAPTURE.txt. Nothing is edited; the registry home (signatures, ledger) is not kept:
tests seal the runs again with their own keys.
"""

from __future__ import annotations

import fnmatch
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

MAX_BYTES = 2 << 20
KEPT = ["runs/*/**", "logs/resolve-*.json", "logs/checkpoints/**", "logs/reproduce-*.log",
        "logs/figures.txt", "logs/nvidia-smi.txt", "logs/project.txt", "logs/records.txt",
        "logs/failed.txt", "logs/diff-*.log", "logs/ab-*.log", "logs/show-*.json", "logs/smi.csv",
        "compare/agreement.json", "pipeline.log", "smi.csv"]


def unpack(results: Path, into: Path) -> Path:
    """The work folder: RESULTS itself, or its archives unpacked into `into`."""
    archives = sorted([*results.glob("*.tar.gz"), *results.glob("*.tar.xz")])
    if not archives:
        return results
    for archive in archives:
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")  # refuses links out and absolute paths
    return into


def wanted(relative: str) -> bool:
    return any(fnmatch.fnmatch(relative, pattern) for pattern in KEPT)


def capture(work: Path, dest: Path) -> list[str]:
    """Copy the kept files; returns the lines of CAPTURE.txt (what was left out)."""
    left_out = []
    for path in sorted(p for p in work.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(work).as_posix()
        if not wanted(relative):
            continue
        if path.stat().st_size > MAX_BYTES:
            left_out.append(f"{relative} ({path.stat().st_size:,} bytes)")
            continue
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return left_out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results, dest = Path(argv[0]), Path(argv[1])
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu-capture-") as tmp:
        left_out = capture(unpack(results, Path(tmp)), dest)
    note = "left out (over the size limit):\n" + "".join(f"  {x}\n" for x in left_out)
    (dest / "CAPTURE.txt").write_text(note if left_out else "nothing left out\n")
    kept = sum(1 for p in dest.rglob("*") if p.is_file())
    print(f"{kept} files in {dest}; {len(left_out)} left out")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
