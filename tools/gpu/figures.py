"""The figures of a GPU job (tools/gpu/device-job.sh) side by side, from its work folder
or from a copy of it (tests/data/gpu-runs/ holds the run directories):

    python3 tools/gpu/figures.py WORK [WORK ...]

Per run: the engine's own capacity lines (server.log) beside the registry's resolved
fields (logs/resolve-RUN.json); per record: the median decode rate; per reproduction:
the three verdicts; the client agreement figures. Then, over every WORK given, the
distinct output streams of each lane: how many cold starts gave which token ids (the
first pass of every run's bench.json). Missing pieces print as `-`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

CAPACITY = re.compile(r"((?:GPU|CPU|XPU) KV cache size: [\d,]+ tokens.*|"
                      r"Available KV cache memory: [\d.]+ GiB)")
FIELDS = ("precision.kv_cache", "precision.kv_scales", "kv.capacity_tokens", "kv.memory_gib",
          "kv.max_concurrency", "parallel.tensor", "attention.backend", "graph.cudagraph_mode")


def load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def runs(work: Path) -> None:
    for run in sorted(p for p in (work / "runs").glob("*") if p.is_dir()):
        status = load(run / "status.json") or {}
        log = run / "server.log"
        lines = CAPACITY.findall(log.read_text(errors="replace")) if log.is_file() else []
        print(f"\n{run.name}: state={status.get('state')} ready_s={status.get('ready_s')}")
        for line in dict.fromkeys(lines):  # once each, in log order (TP ranks repeat them)
            print(f"  engine   {line.strip()}")
        resolved = load(work / "logs" / f"resolve-{run.name}.json") or {}
        fields = resolved.get("fields") or {}
        for name in FIELDS:
            field = fields.get(name) or {}
            print(f"  registry {name} = {field.get('resolved', '-')}"
                  + (f"  ({field['rule']})" if field.get("rule") else ""))
        print(f"  registry kv_usage_peak = {resolved.get('kv_usage_peak', '-')}")
        for problem in resolved.get("errors") or []:
            print(f"  registry ERROR {problem}")


def records(work: Path) -> None:
    print("\nrecords")
    for path in sorted((work / "logs").glob("show-*.json")):
        shown = load(path) or {}
        predicate = (shown.get("statement") or {}).get("predicate") or {}
        lane = (predicate.get("recipe") or {}).get("lane")
        rates = [f"{r.get('suite')}:{name}={m.get('value'):.1f}"
                 for r in predicate.get("results") or []
                 for name, m in (r.get("metrics") or {}).items()
                 if isinstance(m, dict) and isinstance(m.get("value"), int | float)
                 and "decode" in name and "median" in name]
        parent = str(predicate.get("parent"))[:12]
        print(f"  {str(shown.get('id'))[:12]} lane={lane} parent={parent}"
              f"  {' '.join(rates) or '-'}")


def reproductions(work: Path) -> None:
    print("\nreproductions")
    logs = sorted((work / "logs").glob("reproduce-*.log"),
                  key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    for path in logs:
        text = path.read_text(errors="replace")
        start = text.find("{")
        done = load_text(text[start:]) if start >= 0 else None
        if not isinstance(done, dict):
            print(f"  {path.stem}: no JSON verdict ({text.strip().splitlines()[-1:]})")
            continue
        verdicts = {k: v for k, v in done.items() if isinstance(v, dict) and "passed" in v}
        summary = " ".join(f"{k}={v.get('status') or ('pass' if v['passed'] else 'FAIL')}"
                           for k, v in verdicts.items())
        perf = done.get("performance") if isinstance(done.get("performance"), dict) else {}
        rounds = f" rounds={perf['rounds']}/{perf.get('max_rounds')}" if "rounds" in perf else ""
        print(f"  {path.stem}: {summary or '-'}{rounds}")
        for suite in perf.get("suites") or []:  # every scalar the verdict gives per suite
            scalars = {k: v for k, v in suite.items() if isinstance(v, str | int | float)}
            print(f"    {json.dumps(scalars)[:300]}")


def load_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def agreement(work: Path) -> None:
    done = load(work / "compare" / "agreement.json")
    if not isinstance(done, dict):
        return
    print("\nclient agreement")
    for name, value in (done.get("figures") or {}).items():
        print(f"  {name:<32} {value:.4f}")


def streams(works: list[Path]) -> None:
    """Per lane, the runs grouped by the token ids of their first pass."""
    lanes: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for work in works:
        for run in sorted(p for p in (work / "runs").glob("*") if p.is_dir()):
            bench, recipe = load(run / "bench.json"), load(run / "recipe.json")
            if not isinstance(bench, dict) or not isinstance(recipe, dict):
                continue
            tokens = [r.get("token_ids") for r in bench.get("rows") or []]
            digest = hashlib.sha256(json.dumps(tokens).encode()).hexdigest()[:12]
            lanes[str(recipe.get("lane"))][digest].append(f"{work.name}/{run.name}")
    print("\noutput streams (first pass token ids) per lane")
    for lane, by_stream in sorted(lanes.items()):
        total = sum(len(r) for r in by_stream.values())
        print(f"  {lane}: {len(by_stream)} distinct in {total} runs")
        for digest, names in sorted(by_stream.items(), key=lambda kv: -len(kv[1])):
            print(f"    {digest} x{len(names)}: {' '.join(names)}")


def main(argv: list[str]) -> int:
    works = [Path(a) for a in argv] or [Path("/root/work")]
    for work in works:
        if len(works) > 1:
            print(f"\n# {work}")
        for part in (runs, records, reproductions, agreement):
            part(work)
    streams(works)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
