#!/usr/bin/env python3
"""Store: sealing throughput, list/show over 10,000 records, verify --all scaling.

- sealing a run whose artifacts total 1 GiB, into an empty store (hash + durable copy)
  and into a store that already holds the bytes (hash only), against
  `openssl dgst -sha256` on the same file (target >= 0.8x its throughput), and the
  cold seal against a plain `cp` + fsync of the same bytes (the disk's own limit);
- `registry list` / `registry show` as fresh processes over an index of 10,000
  records (target < 0.5 s wall each, no torch/vllm import), against the bare Python
  start-up measured in the same run;
- `registry reindex` of 10,000 records from the ledger alone, and one more seal there;
- `verify --all` wall time per record at 2,000 and 10,000 records (ratio ~1: linear).
Seal figures are best-of-N wall times, read figures medians with their spread, all from
this run; everything lives in a temp dir.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tools" / "benchmarks"))

from ledgers import fill, identity, new_home  # noqa: E402

from registry.store.ledger import Ledger  # noqa: E402

MIB = 1024 * 1024
GIB = 1024 * MIB
REGISTRY = [sys.executable, "-m", "registry"]


def runs(fn: Callable[[], object], repeat: int = 3,
         before: Callable[[], object] | None = None) -> list[float]:
    times = []
    for _ in range(repeat):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def best(fn: Callable[[], object], repeat: int = 3,
         before: Callable[[], object] | None = None) -> float:
    return min(runs(fn, repeat, before))


def spread(times: list[float]) -> str:
    return f"median of {len(times)} ({min(times):.3f}-{max(times):.3f})"


def cli(*args: str) -> Callable[[], object]:
    return lambda: subprocess.run([*REGISTRY, *args], check=True, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def heavy_imports(*args: str) -> list[str]:
    code = ("import sys\nfrom registry.cli import app\ntry:\n    app(sys.argv[1:])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'vllm', 'git'}), "
            "file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    return eval(out.stderr.strip().splitlines()[-1])  # a printed list of names


def seal_figures(folder: Path) -> list[tuple[str, float, str]]:
    from registry.seal import seal_resolved

    home = new_home(folder / "seal")
    run = folder / "run"
    run.mkdir()
    block = os.urandom(16 * MIB)
    with open(run / "server.log", "wb") as f:
        for _ in range(GIB // len(block)):
            f.write(block)

    def seal() -> None:
        seal_resolved(run, home=home, identity=identity(0), recipe=None)

    def empty_store() -> None:
        shutil.rmtree(home.objects / "sha256")
        (home.objects / "sha256").mkdir()
        os.sync()  # start each cold seal with no write-back pending from the last one

    def copy_and_sync() -> None:
        shutil.copyfile(run / "server.log", folder / "copy")
        fd = os.open(folder / "copy", os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        os.unlink(folder / "copy")

    openssl = best(lambda: subprocess.run(["openssl", "dgst", "-sha256", str(run / "server.log")],
                                          check=True, stdout=subprocess.DEVNULL))
    cold = best(seal, repeat=3, before=empty_store)
    warm = best(seal)
    copy = best(copy_and_sync, repeat=2, before=os.sync)
    return [
        ("seal 1 GiB, empty store vs openssl", openssl / cold,
         f"throughput ratio (seal {GIB / cold / 1e9:.2f} GB/s, openssl {GIB / openssl / 1e9:.2f} "
         "GB/s; target >= 0.8): hash + durable copy, bound by the disk"),
        ("seal 1 GiB, bytes already stored vs openssl", openssl / warm,
         f"throughput ratio ({GIB / warm / 1e9:.2f} GB/s): hash only, the copy is abandoned"),
        ("seal 1 GiB, empty store vs cp + fsync", copy / cold,
         f"against the disk's own durable copy ({GIB / copy / 1e9:.2f} GB/s)"),
    ]


def read_figures(folder: Path) -> list[tuple[str, float, str]]:
    from registry.store.reindex import reindex

    home = new_home(folder / "ten-thousand")
    start = time.perf_counter()
    fill(home, 10_000)
    built = time.perf_counter() - start
    rebuild = best(lambda: reindex(home), repeat=1)
    some = Ledger(home.ledger).record_ids()[1234][:10]
    python = statistics.median(runs(lambda: subprocess.run([sys.executable, "-c", "pass"],
                                                           check=True), repeat=5))
    figures = {
        "registry list": runs(cli("list"), 5),
        "registry list --json --limit 0 (all 10,000)": runs(
            cli("list", "--json", "--limit", "0"), 5),
        "registry list --where precision.kv_cache=fp8_e4m3": runs(
            cli("list", "--where", "precision.kv_cache=fp8_e4m3", "--json", "--limit", "0"), 5),
        "registry show PREFIX": runs(cli("show", some), 5),
        "registry show PREFIX --json": runs(cli("show", some, "--json"), 5),
    }
    small = folder / "small-run"
    small.mkdir()
    (small / "server.log").write_text("INFO engine started\n")
    from registry.seal import seal_resolved

    seal_small = best(lambda: seal_resolved(small, home=home, identity=identity(1), recipe=None))
    heavy = heavy_imports("list") + heavy_imports("show", some)
    out = [(name, statistics.median(walls),
            f"s wall over 10,000 records, {spread(walls)} (target < 0.5; python start-up "
            f"alone {python:.3f} s = {statistics.median(walls) / python:.1f}x of it; "
            f"torch/vllm/git imported: {heavy or 'none'}; tools/benchmarks/startup.py "
            "times them alternately with it)") for name, walls in figures.items()]
    return [*out, ("registry reindex (10,000 records)", rebuild,
                   f"s wall to rebuild the index from the ledger (records written in "
                   f"{built:.1f} s)"),
            ("seal a one-file run into 10,000 records", seal_small,
             "s wall in-process: lock, index transaction, ledger commit (git) included")]


def verify_figures(folder: Path) -> list[tuple[str, float, str]]:
    from registry.store.reindex import reindex
    from registry.store.verify import verify_records

    per_record = {}
    for n in (2_000, 10_000):
        home = new_home(folder / f"verify-{n}")
        fill(home, n)
        reindex(home)
        wall = best(lambda home=home: verify_records(home), repeat=2)
        per_record[n] = wall / n
    ratio = per_record[10_000] / per_record[2_000]
    return [("verify --all per record, 10,000 vs 2,000", ratio,
             f"ratio of per-record times ({per_record[2_000] * 1e3:.2f} ms vs "
             f"{per_record[10_000] * 1e3:.2f} ms; ~1 means linear)")]


def run() -> list[tuple[str, float, str]]:
    folder = Path(tempfile.mkdtemp(prefix="registry-bench-store-"))
    saved = dict(os.environ)
    try:
        return [*seal_figures(folder), *read_figures(folder), *verify_figures(folder)]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    for name, value, explanation in run():
        print(f"{name:<52} {value:>9.3f}  {explanation}", flush=True)
