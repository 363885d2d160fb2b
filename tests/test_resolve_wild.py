"""The wild corpus: 28 real vLLM logs other people published, scored as `score.py` does.

The corpus lives beside the checkout (`../shared/fixtures/wild-logs`, or under
$REGISTRY_FIXTURES). Its own `score.py` decides what counts as the same value and which
answers break the contract (a KV precision of `auto`); this test reuses those rules and
runs `registry resolve DIR --json` in-process on each case: no value may be wrong, no
case may crash, and at least 85% of the knowable fields must be right.
"""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from tests.conftest import SHARED, corpus_scorer

WILD = SHARED / "wild-logs"

pytestmark = pytest.mark.skipif(not (WILD / "truth.json").is_file(),
                                reason=f"wild corpus not found at {WILD}")


def scorer() -> ModuleType:
    return corpus_scorer(WILD)


def verdict(score: ModuleType, field: str, truth: object, got: object) -> str | None:
    """score.py's verdict for one field; None: not scored (truth unknown)."""
    if got is not None and str(got) in score.NOT_A_FORMAT.get(field, ()):
        return "WRONG"
    if truth == "unknown":
        return None
    if truth == "absent":
        return "right" if got is None else "WRONG"
    if got is None:
        return "unresolved"
    return "right" if score.same(field, truth, got) else "WRONG"


def test_wild_logs_resolve_right_or_not_at_all(cli) -> None:
    score = scorer()
    totals = {"right": 0, "unresolved": 0, "WRONG": 0, "crash": 0}
    wrong: list[str] = []
    for case in json.loads((WILD / "truth.json").read_text()):
        known = [f for f, v in case["truth"].items() if v != "unknown"]
        result = cli("resolve", WILD / case["case"], "--json")
        if result.exit_code != 0:
            totals["crash"] += len(known)
            wrong.append(f"{case['case']}: exit {result.exit_code}: {result.stderr[:200]}")
            continue
        fields = json.loads(result.stdout)["fields"]
        for field, truth in case["truth"].items():
            got = fields.get(field, {}).get("resolved")
            said = verdict(score, field, truth, got)
            if said is not None:
                totals[said] += 1
            if said == "WRONG":
                wrong.append(f"{case['case']} {field}: truth {truth!r}, resolved {got!r}")
    n = sum(totals.values())
    assert not wrong, "\n".join(wrong)
    assert totals["right"] >= 0.85 * n, totals
    assert n >= 290, totals  # every case was scored


def test_every_wild_log_is_read(cli) -> None:
    """Each log yields its engine's identity lines: none reads as unrecognised."""
    for case in sorted(p for p in WILD.iterdir() if p.is_dir()):
        out = json.loads(cli("resolve", case, "--json").stdout)
        assert not any(n.startswith("unreadable log") for n in out["notes"]), case.name
        fields = out["fields"]
        assert fields["engine.name"].get("resolved") == "vllm" or \
            fields["runtime.max_model_len"].get("resolved"), case.name
