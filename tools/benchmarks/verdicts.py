#!/usr/bin/env python3
"""Does the statistical speed verdict tell noise from a real slowdown? (real CPU engine)

One tiny record (recipes/tiny-bf16-kv.toml, sealed by `registry run`), then:

- `--same` reproductions of it at the default 0.95 floor: target >= 90% passed, none failed;
- `--slow` reproductions with a real change to the run: the whole reproduction (engine
  processes and client) confined to one CPU (`sched_setaffinity`, inherited by every
  process it starts), so the engine has half the cores it was sealed with. (Busy
  processes pinned beside the engine's workers slowed nothing: the scheduler favours
  the engine's threads, which sleep between steps, over processes that never do.)
  Target: every one failed, or reported slower with a ratio interval that excludes 1.0.
  The slowdown is measured and printed: the slow series' mean ratio over the same
  series' mean ratio, both against the one sealed record.

Each reproduction must finish within 3 minutes. Prints both rates, the mean number of
rounds and the slowest reproduction. Everything lives in a temp dir (models are reused
from $REGISTRY_TEST_MODELS when set). Heavy: one engine at a time, minutes per run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "recipes/tiny-bf16-kv.toml"
LIMIT_S = 180


def registry(*args: str, env: dict[str, str],
             cpus: set[int] | None = None) -> subprocess.CompletedProcess[str]:
    """`registry ARGS`; with `cpus`, it and every process it starts run on those only."""
    confine = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    return subprocess.run([sys.executable, "-m", "registry", *args], env=env, text=True,
                          capture_output=True, cwd=ROOT, preexec_fn=confine)


def reproduce(rid: str, out: Path, models: Path, env: dict[str, str],
              cpus: set[int] | None) -> dict:
    args = ["reproduce", rid, "--models", str(models), "--out", str(out), "--json"]
    start = time.monotonic()
    r = registry(*args, env=env, cpus=cpus)
    seconds = time.monotonic() - start
    try:
        perf = json.loads(r.stdout)["performance"]
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"reproduce failed (exit {r.returncode}): {r.stderr[-2000:]}") from None
    [suite] = perf["suites"]
    placement = json.loads((out / "status.json").read_text()).get("placement") or {}
    engine_cpus = sorted(set().union(*placement.get("processes", {}).values()))
    # --json leaves out null fields: no ratio when a side has no unflagged row
    return {"status": perf["status"], "rounds": perf["rounds"], "ratio": suite.get("ratio"),
            "low": suite.get("ratio_low"), "high": suite.get("ratio_high"),
            "slower": suite.get("slower", False), "detail": suite["detail"],
            "quality": suite.get("quality_new"), "seconds": seconds, "cpus": engine_cpus}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def series(name: str, n: int, rid: str, tmp: Path, models: Path, env: dict[str, str],
           cpus: set[int] | None) -> list[dict]:
    out = []
    for i in range(n):
        v = reproduce(rid, tmp / "runs" / f"{name}-{i}", models, env, cpus)
        print(f"{name} {i + 1}/{n}: {v['status']:<12} ratio {_num(v['ratio'])} "
              f"[{_num(v['low'])}, {_num(v['high'])}] rounds {v['rounds']} "
              f"{v['seconds']:.0f} s, engine on CPUs {v['cpus']}; new measurement {v['quality']}: "
              f"{v['detail']}", flush=True)
        out.append(v)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--same", type=int, default=10)
    ap.add_argument("--slow", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="registry-verdicts-") as t:
        tmp = Path(t)
        kept = os.environ.get("REGISTRY_TEST_MODELS")
        models = Path(kept) if kept else tmp / "models"
        subprocess.run([sys.executable, str(ROOT / "tools/tiny_checkpoint.py"), "--out",
                        str(models), "tiny-llama"], check=True, capture_output=True)
        env = {**os.environ, "REGISTRY_KEYS_DIR": str(tmp / "keys"),
               "REGISTRY_HOME": str(tmp / ".registry"),
               "REGISTRY_HASH_CACHE": str(tmp / "hashes.sqlite"), "PYTHONPATH": str(ROOT)}
        env.pop("REGISTRY_DATABASE_URL", None)
        registry("keys", "init", env=env)
        registry("init", str(tmp), env=env)
        base = registry("run", str(RECIPE), "--models", str(models), "--out",
                        str(tmp / "runs/base"), "--json", env=env)
        if base.returncode:
            raise SystemExit(f"the base run failed: {base.stderr[-2000:]}")
        rid = json.loads(registry("list", "--json", env=env).stdout)[0]["id"]
        same = series("same", args.same, rid, tmp, models, env, None)
        slower = series("slow", args.slow, rid, tmp, models, env, {0})
    passed = sum(v["status"] == "passed" for v in same)
    failed = sum(v["status"] == "failed" for v in same)
    caught = sum(v["status"] == "failed" or v["slower"] for v in slower)
    every = same + slower
    print(f"\nsame record, floor 0.95: {passed}/{len(same)} passed, {failed} failed "
          f"(target >= 90% passed, none failed)")
    print(f"slow runs: {caught}/{len(slower)} failed or slower with 1.0 outside the "
          f"interval (target: all)")
    slow_ratios = [v["ratio"] for v in slower if v["ratio"] is not None]
    same_ratios = [v["ratio"] for v in same if v["ratio"] is not None]
    if slow_ratios and same_ratios:
        speed, base = statistics.fmean(slow_ratios), statistics.fmean(same_ratios)
        print(f"slowdown (the reproduction confined to CPU 0): mean ratio "
              f"{speed:.3f} vs {base:.3f} for the same recipe: {(1 - speed / base) * 100:.0f}%")
    print(f"mean rounds {statistics.fmean(v['rounds'] for v in every):.2f}; slowest "
          f"reproduction {max(v['seconds'] for v in every):.0f} s (limit {LIMIT_S} s)")


if __name__ == "__main__":
    main()
