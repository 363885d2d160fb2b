#!/usr/bin/env python3
"""The bench queue: 1,000 queued jobs, 4 worker processes, on a PostgreSQL server
started for the run (unix socket, no TCP).

- The queue alone: 1,000 jobs queued at once, then taken by 4 workers whose job does
  nothing (tests/fleet_worker.py's `noop`: every queue step still happens: fetch
  under `SKIP LOCKED`, lease check at each phase, the job's row written at taken and
  done, procrastinate's finish). Jobs per second from the first start to the last
  finish; the queue's cost per job (4 x that wall / 1,000 worker-seconds, and the
  workers' CPU per job); the rate of `queue add` itself.
- Latency from `queue add` to a worker starting the job: 200 jobs added one at a time
  (every 50 ms) while the 4 workers wait (LISTEN/NOTIFY), each job's `started_at -
  added_at` from the database's own clock: median, p90, p99, max, stdev.
- With the scripted engine: `--engine-jobs` (default 12; docs/fleet.md's run: 1,000)
  real reproductions (engine start, suite, seal, attestation, pull and push to a
  folder remote) queued at once on the same 4 workers: jobs per second, each job's
  time, the queue's time between two jobs of one worker, add -> start; at most
  `--engine-timeout` seconds, the figures then of the jobs done by then.

The machine is shared: the load average before and after is printed with the figures.

    .venv/bin/python tools/benchmarks/fleet_queue.py [--jobs 1000] [--engine-jobs 12]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# this file's folder comes first on the path, and this file's name is the standard
# library's `queue` (which psycopg imports): take the folder off
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]
sys.path.insert(0, str(ROOT))

from registry.fleet.queue import Kind, add_job, connect, ensure_schema  # noqa: E402

PG_BIN = max(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
             key=lambda p: int(p.parent.parent.name)).parent


def as_postgres(*cmd: object) -> None:
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *map(str, cmd)], check=True, capture_output=True)


def start_server(base: Path) -> str:
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    as_postgres(PG_BIN / "initdb", "-D", base / "data", "-A", "trust", "-U", "postgres")
    as_postgres(PG_BIN / "pg_ctl", "-D", base / "data", "-l", base / "server.log", "-w",
                "-o", f"-p 5432 -k {base} -c listen_addresses=''", "start")
    return f"postgresql://postgres@/postgres?host={base}&port=5432"


def stop_server(base: Path) -> None:
    as_postgres(PG_BIN / "pg_ctl", "-D", base / "data", "-m", "fast", "-w", "stop")


def signer_home(root: Path) -> Path:
    """A home with a key: a worker refuses to start without one (noop jobs never use it)."""
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    os.environ["REGISTRY_KEYS_DIR"] = str(root / "keys")
    create_key(root / "keys")
    home = init_home(root / "noop" / ".registry")
    genesis(home, signing_key(root / "keys"))
    return home.root


def workers(url: str, home: Path, root: Path, n: int, noop: bool, env: dict[str, str],
            remote: str | None = None) -> list[subprocess.Popen[str]]:
    procs = []
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        name = f"{'noop' if noop else 'eng'}{i}"
        whome = home if noop else home / name / ".registry"
        # each worker stands for a host of its own: its own lane; a reserve any disk keeps
        policy = {"reserve_gib": 0.01, "run_gib": 0.01, "lane_lock": str(root / f"{name}.lane"),
                  "hold_file": str(root / "held.json"), "stop": {"pid_dir": str(root / "pids")}}
        opts = {"url": url, "name": name, "hardware": "bench", "work_dir": str(root / name),
                "remote": remote, "heartbeat_s": 2.0, "stalled_s": 30.0, "policy": policy}
        penv = {**env, "REGISTRY_HOME": str(whome), "REGISTRY_FLEET_HARDWARE": "bench",
                **({"FLEET_NOOP_JOBS": "1"} if noop else {})}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tests.fleet_worker", json.dumps(opts)], cwd=ROOT,
            env=penv, stdout=subprocess.PIPE, stderr=(root / f"{name}.log").open("w"),
            text=True))
    return procs


def rows(url: str, ids: list[int]) -> list[dict[str, object]]:
    with connect(url) as conn:
        return conn.execute(
            "SELECT f.job_id, f.added_at, f.started_at, f.updated_at, j.status::text AS s, "
            "f.reason, f.worker, j.attempts "
            "FROM registry_fleet_jobs f JOIN procrastinate_jobs j ON j.id = f.job_id "
            "WHERE f.job_id = ANY(%s)", (ids,)).fetchall()


def wait_done(url: str, ids: list[int], timeout: float, progress: bool = False
              ) -> list[float]:
    """Until every job ended; the 1-minute load average, sampled every 30 s. With
    `progress`, a timeout ends the wait (the figures are of the jobs done by then)."""
    end = time.monotonic() + timeout
    loads, last = [os.getloadavg()[0]], time.monotonic()
    while time.monotonic() < end:
        got = rows(url, ids)
        if all(r["s"] in ("succeeded", "failed") for r in got):
            return loads
        if time.monotonic() - last >= 30:
            loads.append(os.getloadavg()[0])
            last = time.monotonic()
            if progress:
                ended = sum(r["s"] in ("succeeded", "failed") for r in got)
                print(f"  {time.strftime('%H:%M:%S')} {ended}/{len(ids)} ended, load "
                      f"{loads[-1]:.1f}", flush=True)
        time.sleep(0.5 if not progress else 5)
    if progress:
        print(f"  stopped waiting after {timeout:.0f} s", flush=True)
        return loads
    raise SystemExit(f"timed out: {len(ids)} jobs not done in {timeout:.0f} s")


def stop(procs: list[subprocess.Popen[str]]) -> float:
    """SIGTERM each worker; their CPU seconds (user + system) from the kernel."""
    cpu = 0.0
    for p in procs:
        p.terminate()
    for p in procs:
        _, _, usage = os.wait4(p.pid, 0)
        cpu += usage.ru_utime + usage.ru_stime
    return cpu


def spread(values: list[float], unit: str = "ms") -> str:
    v = sorted(values)
    k = 1000 if unit == "ms" else 1
    q = statistics.quantiles(v, n=100, method="inclusive") if len(v) > 1 else v * 99
    return (f"median {statistics.median(v) * k:.1f} {unit}, p10 {q[9] * k:.1f}, p90 "
            f"{q[89] * k:.1f}, p99 {q[98] * k:.1f}, max {v[-1] * k:.1f}, stdev "
            f"{(statistics.stdev(v) if len(v) > 1 else 0) * k:.1f} (n={len(v)})")


def queue_alone(url: str, root: Path, n: int, env: dict[str, str]) -> None:
    home = signer_home(root)
    t = time.perf_counter()
    ids = [add_job(url, Kind.reproduce, "0" * 64, "bench").id for _ in range(n)]
    add_s = time.perf_counter() - t
    print(f"queue add: {n} jobs in {add_s:.2f} s = {n / add_s:.0f} jobs/s "
          f"({add_s / n * 1000:.1f} ms each: two connections per add, as the command)")
    procs = workers(url, home, root, 4, True, env)
    wait_done(url, ids, 900)
    got = rows(url, ids)
    first = min(r["started_at"] for r in got)  # type: ignore[type-var]
    last = max(r["updated_at"] for r in got)  # type: ignore[type-var]
    wall = (last - first).total_seconds()  # type: ignore[operator]
    cpu = stop(procs)
    done = sum(r["s"] == "succeeded" for r in got)
    print(f"queue alone, 4 workers: {done}/{n} done in {wall:.2f} s = {n / wall:.1f} jobs/s; "
          f"per job {4 * wall / n * 1000:.1f} worker-ms, workers' CPU {cpu / n * 1000:.1f} ms "
          f"(CPU includes each worker's start, {cpu:.1f} s in all)")


def latency(url: str, root: Path, n: int, env: dict[str, str]) -> None:
    home = root / "noop" / ".registry"
    procs = workers(url, home, root / "lat", 4, True, env)
    time.sleep(8)  # every worker started and listening
    ids = []
    for _ in range(n):
        ids.append(add_job(url, Kind.reproduce, "0" * 64, "bench").id)
        time.sleep(0.05)
    wait_done(url, ids, 300)
    got = rows(url, ids)
    stop(procs)
    ran = [r for r in got if r["started_at"] is not None]
    lat = [(r["started_at"] - r["added_at"]).total_seconds() for r in ran]  # type: ignore[operator]
    print(f"add -> start, one job every 50 ms, 4 idle workers: {spread(lat)}")
    for r in got:
        if r["s"] != "succeeded":
            print(f"  job {r['job_id']}: {r['s']} after {r['attempts']} runs: {r['reason']}")


def with_engine(url: str, root: Path, n: int, timeout: float) -> None:
    """`n` reproductions queued at once on the scripted engine, 4 workers pulling and
    pushing to one folder remote: throughput, each job's time, the queue's own time
    between one job's end and its worker's next start, and the wait from `queue add`
    to a worker starting it (mostly the backlog ahead of it)."""
    from tests.fleet_team import build_fleet

    fleet = build_fleet(root / "team", url)
    for i in range(4):
        fleet.home(f"eng{i}")
    ids = [add_job(url, Kind.reproduce, fleet.record, "bench").id for _ in range(n)]
    t = time.perf_counter()
    procs = workers(url, fleet.root, fleet.root, 4, False, fleet.env, remote="origin")
    loads = wait_done(url, ids, timeout, progress=True)
    wall = time.perf_counter() - t
    got = rows(url, ids)
    stop(procs)
    done = sorted((r for r in got if r["s"] == "succeeded"),
                  key=lambda r: r["started_at"])  # type: ignore[arg-type,return-value]
    first = min(r["started_at"] for r in done)  # type: ignore[type-var]
    last = max(r["updated_at"] for r in done)  # type: ignore[type-var]
    busy = (last - first).total_seconds()  # type: ignore[operator]
    per = [(r["updated_at"] - r["started_at"]).total_seconds() for r in done]  # type: ignore[operator]
    wait = [(r["started_at"] - r["added_at"]).total_seconds() for r in done]  # type: ignore[operator]
    print(f"scripted engine, 4 workers: {len(done)}/{n} done ({n - len(done)} not: "
          f"{sorted({str(r['reason'])[:80] for r in got if r['s'] != 'succeeded'})}); "
          f"{wall:.0f} s with the workers' starts, {busy:.0f} s first start -> last done "
          f"= {len(done) / busy:.3f} jobs/s")
    print(f"  one job (taken -> done: pull, engine, suite, seal, attest, push): "
          f"{spread(per, 's')}")
    print(f"  the queue between jobs (a worker's done -> its next start): "
          f"{spread(gaps(done), 'ms')}")
    print(f"  queue add -> a worker starting it (the backlog ahead of it): {spread(wait, 's')}")
    half = len(per) // 2  # does a job slow down as the ledgers grow?
    print(f"  one job, median: first {half} jobs {statistics.median(per[:half]):.2f} s, "
          f"last {len(per) - half} {statistics.median(per[half:]):.2f} s")
    print(f"  load average during the run (1 min, every 30 s): min {min(loads):.1f}, "
          f"median {statistics.median(loads):.1f}, max {max(loads):.1f}")


def gaps(done: list[dict[str, object]]) -> list[float]:
    """Per worker, the time from one job's last write (done) to its next job's start."""
    by: dict[str, list[dict[str, object]]] = {}
    for r in done:
        by.setdefault(str(r["worker"]), []).append(r)
    out = []
    for jobs in by.values():
        jobs.sort(key=lambda r: r["started_at"])  # type: ignore[arg-type,return-value]
        out += [(b["started_at"] - a["updated_at"]).total_seconds()  # type: ignore[operator]
                for a, b in itertools.pairwise(jobs)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--latency-jobs", type=int, default=200)
    ap.add_argument("--engine-jobs", type=int, default=12)
    ap.add_argument("--engine-timeout", type=float, default=2 * 3600,
                    help="seconds to wait for the engine jobs; the figures are of those "
                         "done by then")
    args = ap.parse_args()
    print(f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} "
          f"{os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} (1/5/15 min) before")
    base = Path(tempfile.mkdtemp(prefix="registry-bench-pg-"))
    root = Path(tempfile.mkdtemp(prefix="registry-bench-queue-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    env.update(PYTHONPATH=str(ROOT), REGISTRY_KEYS_DIR=str(root / "keys"))
    try:
        url = start_server(base)
        ensure_schema(url)
        if args.jobs:
            queue_alone(url, root, args.jobs, env)
        else:
            signer_home(root)
        if args.latency_jobs:
            latency(url, root, args.latency_jobs, env)
        if args.engine_jobs:
            with_engine(url, root, args.engine_jobs, args.engine_timeout)
    finally:
        stop_server(base)
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
          f"{os.getloadavg()[2]:.1f}")


if __name__ == "__main__":
    main()
