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

With `--control`, the record and a control (another record of the same recipe, sealed
just before it, both with `run --starts SEALED_STARTS`) are re-run in alternating starts
(`reproduce --control`, `--starts` each): the verdict is the controlled one, and the
uncontrolled verdict of the same record starts is printed beside it. `--ab N` adds N
runs of `registry ab` of the recipe against itself (`--starts 3`): target, the boost's
interval contains 0.

Each reproduction must finish within 3 minutes (per start with --control). Prints both
rates, the mean number of rounds (or starts) and the slowest reproduction. Under
`--control` the slow series confines only the record's engine starts to CPU 0 (the
engine process is started with that affinity, and every process it starts inherits
it; the client and the control's starts keep both CPUs): confining the whole
reproduction would slow the control as well, which is what a control cancels.
Everything lives in a temp dir (models are reused
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
              cpus: set[int] | None, control: str | None = None, starts: int = 1) -> dict:
    args = ["reproduce", rid, "--models", str(models), "--out", str(out), "--json"]
    if control:
        args += ["--control", control, "--starts", str(starts)]
    start = time.monotonic()
    if control and cpus:  # only the record's engine starts confined (the driver below)
        r = subprocess.run([sys.executable, __file__, "--driver", rid, control, str(out),
                            str(models), str(starts)], env=env, text=True,
                           capture_output=True, cwd=ROOT)
    else:
        r = registry(*args, env=env, cpus=cpus)
    seconds = time.monotonic() - start
    try:
        done = json.loads(r.stdout)
        perf = done["performance"]
    except (ValueError, KeyError, TypeError):
        raise SystemExit(f"reproduce failed (exit {r.returncode}): {r.stderr[-2000:]}") from None
    [suite] = perf["suites"]
    first = out / "00-record" if control else out
    placement = json.loads((first / "status.json").read_text()).get("placement") or {}
    engine_cpus = sorted(set().union(*placement.get("processes", {}).values()))
    extra = _controlled(done["controlled"]) if control else {}
    # --json leaves out null fields: no ratio when a side has no unflagged row
    return {"status": perf["status"], "rounds": perf["rounds"], "ratio": suite.get("ratio"),
            "low": suite.get("ratio_low"), "high": suite.get("ratio_high"),
            "slower": suite.get("slower", False), "detail": suite["detail"],
            "quality": suite.get("quality_new"), "seconds": seconds, "cpus": engine_cpus,
            "probe": done.get("host_speed"), **extra}


def _controlled(c: dict) -> dict:
    """The uncontrolled verdict of the same record starts, and the host factor."""
    [u] = c["uncontrolled"]["suites"]
    [s] = c["suites"]
    return {"starts": len(c["order"]), "host": s.get("host_factor"),
            "why": (s.get("why") or {}).get("reason"),
            "u_status": c["uncontrolled"]["status"], "u_ratio": u.get("ratio"),
            "u_low": u.get("ratio_low"), "u_high": u.get("ratio_high"),
            "u_slower": u.get("slower", False)}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def series(name: str, n: int, rid: str, tmp: Path, models: Path, env: dict[str, str],
           cpus: set[int] | None, control: str | None = None, starts: int = 1) -> list[dict]:
    out = []
    for i in range(n):
        v = reproduce(rid, tmp / "runs" / f"{name}-{i}", models, env, cpus, control, starts)
        print(f"{name} {i + 1}/{n}: {v['status']:<12} ratio {_num(v['ratio'])} "
              f"[{_num(v['low'])}, {_num(v['high'])}] rounds {v['rounds']} "
              f"{v['seconds']:.0f} s, engine on CPUs {v['cpus']}; new measurement {v['quality']}: "
              f"{v['detail']}; host probe {_num(v['probe'])}", flush=True)
        if control:
            print(f"  why: {v['why']}\n  uncontrolled: {v['u_status']:<12} ratio "
                  f"{_num(v['u_ratio'])} [{_num(v['u_low'])}, {_num(v['u_high'])}]; host "
                  f"factor {_num(v['host'])}", flush=True)
        out.append(v)
    return out


def ab_series(n: int, tmp: Path, models: Path, env: dict[str, str]) -> list[dict]:
    out = []
    for i in range(n):
        start = time.monotonic()
        r = registry("ab", str(RECIPE), str(RECIPE), "--starts", "3", "--models", str(models),
                     "--out", str(tmp / "runs" / f"ab-{i}"), "--json", env=env)
        if r.returncode:
            raise SystemExit(f"ab failed (exit {r.returncode}): {r.stderr[-2000:]}")
        [s] = json.loads(r.stdout)["suites"]
        low, high = s.get("low_pct"), s.get("high_pct")
        zero = low is not None and high is not None and low <= 0 <= high
        print(f"ab {i + 1}/{n}: {s['verdict']:<14} boost {_num(s.get('boost_pct'))}% "
              f"[{_num(low)}, {_num(high)}] A {_num(s.get('a'))} B {_num(s.get('b'))} tok/s "
              f"per start A {s['a_starts']} B {s['b_starts']}; {time.monotonic() - start:.0f} s",
              flush=True)
        out.append({"zero": zero, **s})
    return out


def driver(rid: str, control: str, out: str, models: str, starts: str) -> None:
    """A controlled reproduction whose record starts run on CPU 0 only: printed as JSON."""
    from registry.executor.engine import Engine
    from registry.reproduce import reproduce as reproduce_record
    from registry.store.home import find_home

    class OneCpu(Engine):
        def start(self) -> None:  # the engine process, and all it starts, on CPU 0
            old = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {0})
            try:
                super().start()
            finally:
                os.sched_setaffinity(0, old)

    def launcher(plan, log):  # type: ignore[no-untyped-def]
        return (OneCpu if log.parent.name.endswith("-record") else Engine)(plan, log)

    done = reproduce_record(find_home(None), rid, control=control, starts=int(starts),
                            models_dir=Path(models), out_dir=Path(out), launcher=launcher)
    print(done.model_dump_json(exclude_none=True))


def main() -> None:
    if sys.argv[1:2] == ["--driver"]:
        driver(*sys.argv[2:7])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--same", type=int, default=10)
    ap.add_argument("--slow", type=int, default=10)
    ap.add_argument("--control", action="store_true",
                    help="controlled reproductions against a second record of the recipe")
    ap.add_argument("--starts", type=int, default=1, help="with --control: starts of each")
    ap.add_argument("--sealed-starts", type=int, default=3,
                    help="with --control: engine starts each sealed record is measured over")
    ap.add_argument("--ab", type=int, default=0, help="runs of `registry ab` of the recipe "
                                                      "against itself, --starts 3")
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
        sealed = ["--starts", str(args.sealed_starts)] if args.control else []
        control = None
        if args.control:
            control = seal(tmp, models, env, "control", sealed)
        rid = seal(tmp, models, env, "base", sealed)
        print(f"record {rid[:16]} and control {str(control)[:16]} sealed "
              f"(starts {sealed or 1})", flush=True)
        if control:
            foresee(rid, control, args.starts, models, env)
        same = series("same", args.same, rid, tmp, models, env, None, control, args.starts)
        slower = series("slow", args.slow, rid, tmp, models, env, {0}, control, args.starts)
        abs_ = ab_series(args.ab, tmp, models, env)
    passed = sum(v["status"] == "passed" for v in same)
    failed = sum(v["status"] == "failed" for v in same)
    caught = sum(v["status"] == "failed" or v["slower"] for v in slower)
    every = same + slower
    wrong = failed + sum(v["slower"] for v in same) + sum(v["status"] == "passed" for v in slower)
    undecided = [v for v in every if v["status"] == "inconclusive"]
    print(f"\nwrong verdicts: {wrong} of {len(every)}; undecided {len(undecided)}, "
          f"{sum(bool(v.get('why')) for v in undecided)} of them saying why")
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
    elif slow_ratios and args.control:  # the control stands for the same recipe now
        speed = statistics.fmean(slow_ratios)
        print(f"slowdown (the record's starts confined to CPU 0): mean controlled ratio "
              f"{speed:.3f} ({min(slow_ratios):.3f}-{max(slow_ratios):.3f}): "
              f"{(1 - speed) * 100:.0f}%")
    if args.control and every:
        u_passed = sum(v["u_status"] == "passed" for v in same)
        u_failed = sum(v["u_status"] == "failed" for v in same)
        u_caught = sum(v["u_status"] == "failed" or v["u_slower"] for v in slower)
        print(f"uncontrolled verdict on the same runs: same {u_passed}/{len(same)} passed, "
              f"{u_failed} failed; slow {u_caught}/{len(slower)} failed or slower")
        hosts = [v["host"] for v in every if v["host"]]
        if hosts:
            print(f"host factor (control now / control sealed): {min(hosts):.3f}-"
                  f"{max(hosts):.3f}")
        print(f"mean starts per reproduction {statistics.fmean(v['starts'] for v in every):.1f}")
    if every:
        limit = f"{LIMIT_S} s a start" if args.control else f"{LIMIT_S} s"
        print(f"mean rounds {statistics.fmean(v['rounds'] for v in every):.2f}; slowest "
              f"reproduction {max(v['seconds'] for v in every):.0f} s (limit {limit})")
    if abs_:
        print(f"ab of the recipe against itself: the interval contains 0 in "
              f"{sum(v['zero'] for v in abs_)}/{len(abs_)} (target >= 9/10)")


def foresee(rid: str, control: str, starts: int, models: Path, env: dict[str, str]) -> None:
    """What the planned starts can decide, from the sealed starts (`--dry-run`)."""
    r = registry("reproduce", rid, "--control", control, "--starts", str(starts), "--dry-run",
                 "--models", str(models), "--json", env=env)
    found = json.loads(r.stdout).get("foreseen") if r.stdout else None
    for f in found or []:  # --json leaves out the null fields
        parity = f.get("starts_for_parity") or "none within 200"
        print(f"foreseen {f['suite']}: sealed starts {f.get('start_spread_pct', 0):.1f}% apart; "
              f"{starts} a side pass above {_num(f.get('passes_above'))}; a ratio of 1.0 needs "
              f"{parity} a side", flush=True)


def seal(tmp: Path, models: Path, env: dict[str, str], name: str, extra: list[str]) -> str:
    """`registry run` of the recipe, sealed: its record id."""
    r = registry("run", str(RECIPE), "--models", str(models), "--out", str(tmp / "runs" / name),
                 "--json", *extra, env=env)
    if r.returncode:
        raise SystemExit(f"the {name} run failed: {r.stderr[-2000:]}")
    return str(json.loads(r.stdout)["record"]["id"])


if __name__ == "__main__":
    main()
