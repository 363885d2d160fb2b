"""Claims as signed objects: `claim add|show|list|advance`, the state machine enforced
from real sealed records and signed verifications (the judges' own verdicts), evidence
levels derived, and attacks with plain git refused. Property tests of the lifecycle."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.claims.lifecycle import MOVES, Evidence, decide
from registry.claims.models import ClaimBody, ClaimedFigure, ClaimedIdentity, State
from registry.errors import Refused
from registry.formats.metricwords import named
from registry.formats.verification import Check, Figure, Policy, Result, Verifier, verification
from tests.conftest import resolved_identity
from tests.test_team import team  # noqa: F401  (the push/pull fixture)

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
pytestmark = SQLITE
CLAIM = ["--metric", "median of per-row 99/(t[99]-t[0]) decode", "--by", "lab",
         "--model", "tiny-llama", "--quantization", "bfloat16", "--engine", "vllm",
         "--hardware", "cpu", "--tp", "1", "--quality-gate", "bitwise-teacher"]


def identity():
    """The resolver's identity of a CPU run of the tiny model (what the claim names)."""
    from registry.formats.identity import Evidence as Ev
    from registry.formats.identity import ResolvedField, Status

    base = resolved_identity()
    extra = {name: ResolvedField(declared=None, resolved=value, status=Status.undeclared,
                                 rule="test", evidence=[Ev(source="server.log", line=2)])
             for name, value in (("model.path", "/models/tiny-llama"),
                                 ("runtime.device", "cpu"))}
    return base.model_copy(update={"fields": {**base.fields, **extra}})


def measured(run: Path, step: float) -> Path:
    """The run's rows replaced by a real-looking suite: 12 prompts of known length, each
    answered with max_tokens (128) tokens, one per chunk at a steady pace with a little
    jitter, the output text kept (what a bitwise contract and a speed verdict need)."""
    from registry.formats.rundir import Bench, BenchRow, SuiteRef

    rows = []
    for i in range(12):
        pace = step * (1 + 0.01 * (i % 4))
        times = [0.05 + k * pace for k in range(128)]
        rows.append(BenchRow(suite="tiny-cold", index=i, prompt_id=f"p{i}", prompt_sha256="0" * 64,
                             prompt_tokens=10 + i, cached_tokens=0, completion_tokens=128,
                             finish_reason="length", token_ids=[(i + k) % 97 for k in range(128)],
                             token_times_s=times, chunk_times_s=times, text=f"answer {i}"))
    bench = Bench(api="completions", model="tiny", params={"max_tokens": 128},
                  suites=[SuiteRef(name="tiny-cold", prompts=len(rows))], rows=rows)
    (run / "bench.json").write_text(bench.model_dump_json(by_alias=True))
    return run


@pytest.fixture
def records(seal_run_dir, make_run):
    """Three sealed CPU records: a, its faithful re-run b, and c, a run 5x slower."""
    return {name: seal_run_dir(measured(make_run(name), step), identity=identity()).id
            for name, step in (("a", 0.01), ("b", 0.01), ("c", 0.05))}


def reproduce(home, original: str, new: str) -> str:
    """The judges' real verdicts on two sealed records, attested as `reproduce` does."""
    from registry.contracts.sealed import load_sealed
    from registry.formats.rundir import LaunchPlan
    from registry.recipe.schema import MetricFormula
    from registry.reproduce import Reproduction, attest
    from registry.reproduce.environment import EnvironmentCheck
    from registry.reproduce.judge import contract_verdict, identity_verdict, performance_verdict

    a, b = load_sealed(home, original), load_sealed(home, new)
    perf = performance_verdict(a, b, MetricFormula("99 / (t[99] - t[0])"), 100, 0.95, 1)
    ident = identity_verdict(a, b)
    contract = contract_verdict(home, "bitwise-teacher", a, b, b.recipe)
    passed = ident.passed and contract.passed and perf.passed
    done = Reproduction(original=original, recipe="record", record=new,
                        plan=LaunchPlan(platform="cpu", argv=["vllm"], env={}, cwd=".", port=1),
                        environment=EnvironmentCheck(facts=[], drift=[]), identity=ident,
                        contract=contract, performance=perf, passed=passed)
    att = attest(home, done).verification
    assert att is not None
    return att


def median(cli, rid: str) -> dict:
    shown = json.loads(cli("show", rid, "--json").stdout)
    return shown["statement"]["predicate"]["results"][0]["metrics"]["decode_tok_s.median"]


def ok(r) -> dict:
    assert r.exit_code == 0, r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout) if r.stdout.startswith(("{", "[")) else {}


def test_add_show_list(cli, store_home) -> None:
    made = ok(cli("claim", "add", "tiny", "--value", "420.5", *CLAIM, "--date", "2026-12",
                  "--evidence", "runs/a", "--json"))
    assert made["status"] == "submitted" and made["claimed"]["value"] == 420.5
    assert made["claimed"]["metric"].startswith("median of per-row 99/(t[99]-t[0]) decode")
    assert "99 / (t[99] - t[0])" in made["claimed"]["metric"]  # the formula its words name
    listed = ok(cli("claim", "list", "--json"))
    assert [c["id"] for c in listed] == ["tiny"]
    c = listed[0]
    assert {"id", "status", "claimed", "verification", "history", "evidence_level"} <= set(c)
    assert c["claimed"]["by"] == "lab" and c["claimed"]["date"] == "2026-12"
    assert c["evidence_level"]["level"] == "community-reported"
    assert [h["event"] for h in c["history"]] == ["submitted"]
    again = cli("claim", "add", "tiny", "--value", "1", *CLAIM)
    assert again.exit_code == 6 and "already exists" in again.stderr
    bad = cli("claim", "add", "Bad Id!", "--value", "1", *CLAIM)
    assert bad.exit_code == 4 and "claim id" in bad.stderr and "Traceback" not in bad.stderr
    assert cli("claim", "show", "nope").exit_code == 5
    assert "tiny" in cli("claim", "list").stdout


def test_a_claim_is_confirmed_only_by_a_matching_passed_reproduction(cli, store_home,
                                                                     records) -> None:
    att = reproduce(store_home, records["a"], records["b"])
    m = median(cli, records["b"])
    assert m["ci_low"] <= m["value"] <= m["ci_high"]
    ok(cli("claim", "add", "tiny", "--value", str(m["value"]), *CLAIM))
    no_evidence = cli("claim", "advance", "tiny", "--to", "confirmed")
    assert no_evidence.exit_code == 6 and "needs a verification" in no_evidence.stderr
    ok(cli("claim", "advance", "tiny", "--to", "queued"))
    ok(cli("claim", "advance", "tiny", "--to", "reproducing"))
    adjusted = cli("claim", "advance", "tiny", "--to", "confirmed-adjusted", "--verification",
                   att[:10])
    assert adjusted.exit_code == 6 and "contains the claimed" in adjusted.stderr
    shown = ok(cli("claim", "advance", "tiny", "--to", "confirmed", "--verification", att[:10],
                   "--json"))
    assert shown["status"] == "confirmed"
    assert {a["axis"]: a["outcome"] for a in shown["axes"]} == dict.fromkeys(
        ("model", "quantization", "runtime", "topology", "metric", "quality_gate"), "same")
    v = shown["verification"]
    assert v["value"] == m["value"] and v["record"] == records["b"] and v["verification"] == att
    assert [h["event"].split(":")[0] for h in shown["history"]] == [
        "submitted", "queued", "reproducing", "confirmed"]
    assert shown["evidence_level"]["level"] == "cpu-verified"


def test_an_interval_that_excludes_the_claim_adjusts_it(cli, store_home, records) -> None:
    att = reproduce(store_home, records["a"], records["b"])
    m = median(cli, records["b"])
    ok(cli("claim", "add", "tiny", "--value", str(m["ci_high"] * 1.5), *CLAIM))
    r = cli("claim", "advance", "tiny", "--to", "confirmed", "--verification", att)
    assert r.exit_code == 6 and "excludes the claimed" in r.stderr
    shown = ok(cli("claim", "advance", "tiny", "--to", "confirmed-adjusted", "--verification",
                   att, "--json"))
    assert shown["status"] == "confirmed-adjusted"
    assert shown["verification"]["value"] == m["value"]
    assert shown["claimed"]["value"] == m["ci_high"] * 1.5  # the claim keeps its figure


@pytest.mark.parametrize(("flag", "value", "axis"), [
    ("--quantization", "fp8", "quantization"), ("--tp", "2", "topology"),
    ("--hardware", "B70", "topology"), ("--quality-gate", "semantic-gates", "quality_gate"),
    ("--engine", "llama.cpp-sycl", "runtime"), ("--model", "laguna", "model")])
def test_another_identity_is_not_confirmed(cli, store_home, records, flag, value, axis) -> None:
    att = reproduce(store_home, records["a"], records["b"])
    m = median(cli, records["b"])
    args = list(CLAIM)
    args[args.index(flag) + 1] = value
    ok(cli("claim", "add", "other", "--value", str(m["value"]), *args))
    r = cli("claim", "advance", "other", "--to", "confirmed", "--verification", att)
    assert r.exit_code == 6 and f"{axis}: claim" in r.stderr and "Traceback" not in r.stderr
    assert ok(cli("claim", "show", "other", "--json"))["status"] == "submitted"


def test_a_claim_without_a_named_formula_cannot_be_confirmed(cli, store_home, records) -> None:
    att = reproduce(store_home, records["a"], records["b"])
    args = list(CLAIM)
    args[1] = "typical decode rate, first 100 words of a fresh answer"
    ok(cli("claim", "add", "vague", "--value", "1", *args))
    r = cli("claim", "advance", "vague", "--to", "confirmed", "--verification", att)
    assert r.exit_code == 6 and "metric: claim None" in r.stderr


def test_a_failed_reproduction_refutes_and_refuted_is_final(cli, store_home, records) -> None:
    slow = reproduce(store_home, records["a"], records["c"])
    good = reproduce(store_home, records["a"], records["b"])
    ok(cli("claim", "add", "tiny", "--value", "1", *CLAIM))
    wrong = cli("claim", "advance", "tiny", "--to", "refuted", "--verification", good)
    assert wrong.exit_code == 6 and "needs a failed reproduction" in wrong.stderr
    shown = ok(cli("claim", "advance", "tiny", "--to", "refuted", "--verification", slow,
                   "--json"))
    assert shown["status"] == "refuted" and shown["evidence_level"]["level"] == "invalid"
    assert "performance" in shown["evidence_level"]["reason"]
    for target in ("confirmed", "queued", "stale", "lab-verified"):
        r = cli("claim", "advance", "tiny", "--to", target, "--verification", good)
        assert r.exit_code == 6 and "no move from refuted" in r.stderr
    assert ok(cli("claim", "show", "tiny", "--json"))["status"] == "refuted"


def test_stale_names_what_moved(cli, store_home, records) -> None:
    att = reproduce(store_home, records["a"], records["b"])
    ok(cli("claim", "add", "tiny", "--value", str(median(cli, records["b"])["value"]), *CLAIM))
    ok(cli("claim", "advance", "tiny", "--to", "lab-verified", "--verification", att))
    r = cli("claim", "advance", "tiny", "--to", "stale")
    assert r.exit_code == 6 and "must name what moved" in r.stderr
    shown = ok(cli("claim", "advance", "tiny", "--to", "stale", "--moved", "runtime=vllm 0.33",
                   "--json"))
    assert shown["status"] == "stale"
    assert shown["evidence_level"] == {"level": "superseded", "reason": "moved: runtime -> "
                                                                        "vllm 0.33"}


def test_levels_follow_the_lab_keys(cli, store_home, records, tmp_path) -> None:
    from registry.signing.keys import create_key

    review = ok_or(cli("review", records["a"], "--json"))["verification"]  # reject or not
    ok(cli("claim", "add", "tiny", "--value", "1", *CLAIM))
    shown = ok(cli("claim", "advance", "tiny", "--to", "queued", "--verification", review,
                   "--json"))
    assert shown["evidence_level"]["level"] == "cpu-tested"  # a lab run on the claimed HW
    other = create_key(tmp_path / "other")
    pub = tmp_path / "other.pub"
    pub.write_text(other.public_pem)
    ok_trust = cli("keys", "trust", pub)
    assert ok_trust.exit_code == 0, ok_trust.stderr
    assert cli("claim", "lab-key", other.keyid).exit_code == 0
    level = ok(cli("claim", "show", "tiny", "--json"))["evidence_level"]
    assert level == {"level": "community-reported", "reason": "no run signed by a lab key"}


# ---- attacks with plain git ----

def _git(ledger: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ledger), "-c", "user.name=x", "-c", "user.email=x@x",
                    *args], check=True, capture_output=True)


def _events(home) -> list[Path]:
    return sorted((home.ledger / "claims" / "tiny").glob("*.json"))


def test_a_rewritten_event_is_refused(cli, store_home) -> None:
    import base64

    ok(cli("claim", "add", "tiny", "--value", "100", *CLAIM))
    [path] = _events(store_home)
    envelope = json.loads(path.read_bytes())
    payload = base64.b64decode(envelope["payload"]).replace(b'"value":100', b'"value":200')
    envelope["payload"] = base64.b64encode(payload).decode()
    path.write_text(json.dumps(envelope))
    _git(store_home.ledger, "commit", "-qam", "better figure")
    r = cli("claim", "show", "tiny")
    assert r.exit_code == 1 and "history does not verify" in r.stderr
    assert "not signed" in r.stderr or "changed by commit" in r.stderr
    report = ok_or(cli("verify", "--all", "--json"))
    assert any("only ever added" in p["detail"] for p in report["ledger"])


def ok_or(r) -> dict:
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def test_an_event_signed_by_an_untrusted_key_is_refused(cli, store_home, tmp_path) -> None:
    """Mallory appends a confirmation signed by her own key, committed with plain git."""
    from registry.base.canonical import canonical_bytes, sha256_hex
    from registry.claims.events import now
    from registry.claims.models import EVENT_PAYLOAD_TYPE, ClaimEvent, EventKind
    from registry.signing import dsse
    from registry.signing.keys import create_key, signing_key

    ok(cli("claim", "add", "tiny", "--value", "100", *CLAIM))
    [first] = _events(store_home)
    create_key(tmp_path / "mallory")
    keyid, key = signing_key(tmp_path / "mallory")
    event = ClaimEvent(claim="tiny", seq=1, previous=first.stem, kind=EventKind.advanced,
                       time=now(), actor=keyid, state=State.queued)
    data = canonical_bytes(event)
    path = first.parent / f"{sha256_hex(data)}.json"
    path.write_bytes(dsse.envelope_bytes(dsse.sign(data, keyid, key, EVENT_PAYLOAD_TYPE)))
    _git(store_home.ledger, "add", "-A")
    _git(store_home.ledger, "commit", "-qm", "queued")
    r = cli("claim", "show", "tiny")
    assert r.exit_code == 1 and "not signed" in r.stderr


def test_a_signed_event_that_skips_the_evidence_is_refused(cli, store_home) -> None:
    """A trusted signer who writes `confirmed` without a verification (bypassing the
    command) is refused on read: the replay decides every move again."""
    from registry.claims.events import append, now, replay
    from registry.claims.models import ClaimEvent, EventKind
    from registry.signing.keys import signing_key

    ok(cli("claim", "add", "tiny", "--value", "100", *CLAIM))
    last = replay(store_home, "tiny").events[-1]
    signer = signing_key()
    append(store_home, ClaimEvent(claim="tiny", seq=1, previous=last.id, kind=EventKind.advanced,
                                  time=now(), actor=signer[0], state=State.confirmed), signer)
    r = cli("claim", "show", "tiny")
    assert r.exit_code == 6 and "confirmed needs a verification" in r.stderr


def test_a_deleted_event_is_refused(cli, store_home) -> None:
    ok(cli("claim", "add", "tiny", "--value", "100", *CLAIM))
    ok(cli("claim", "advance", "tiny", "--to", "queued"))
    newest = max(_events(store_home), key=lambda p: json.loads(
        __import__("base64").b64decode(json.loads(p.read_bytes())["payload"]))["seq"])
    _git(store_home.ledger, "rm", "-q", str(newest.relative_to(store_home.ledger)))
    _git(store_home.ledger, "commit", "-qm", "undo")
    r = cli("claim", "show", "tiny")
    assert r.exit_code == 1 and "history does not verify" in r.stderr


# ---- the lifecycle as a property ----

BODY = ClaimBody(id="p", claimed=ClaimedFigure(value=100.0, metric=named("median 99-interval"),
                                               by="lab"),
                 identity=ClaimedIdentity(model="tiny-llama", quantization="bfloat16",
                                          engine="vllm", hardware="cpu", tp=1,
                                          quality_gate="bitwise-teacher"))


def _evidence(record, rid: str, result: Result, low: float, high: float) -> Evidence:
    figure = Figure(metric="tiny-cold/decode_tok_s.median", value=(low + high) / 2, low=low,
                    high=high, record=rid)
    checks = [Check(name="identity", result=Result.passed),
              Check(name="contract", result=Result.passed),
              Check(name="performance", result=result, figures=[figure])]
    v = verification({"original": rid, "reproduction": rid}, checks,
                     policy=Policy(name="reproduce", uri="x"), verifier=Verifier(id="t", key="k"))
    return Evidence(verification_id="0" * 64, verification=v, record_id=rid, record=record)


@pytest.fixture
def sealed(store_home, seal_run_dir, make_run):
    from registry.store.query import sealed_statement

    rid = seal_run_dir(make_run("p"), identity=identity()).id
    return sealed_statement(store_home, rid)


MOVE = st.tuples(st.sampled_from(list(State)), st.sampled_from(["none", "pass", "fail"]),
                 st.floats(50, 150), st.floats(0, 60))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moves=st.lists(MOVE, max_size=12))
def test_no_path_leads_out_of_refuted(sealed, moves) -> None:
    """Whatever moves are tried with whatever evidence: a move is taken only when the
    table allows it; refuted is never left; confirmed only with an interval that holds
    the claimed figure, confirmed-adjusted only with one that excludes it."""
    rid, record = sealed
    state, refuted = State.submitted, False
    for target, kind, centre, half in moves:
        evidence = None if kind == "none" else _evidence(
            record, rid, Result.passed if kind == "pass" else Result.failed,
            centre - half, centre + half)
        try:
            decision = decide(state, target, BODY, evidence, {"runtime": "x"})
        except Refused:
            continue
        assert target in MOVES[state] and not refuted
        inside = evidence is not None and centre - half <= 100.0 <= centre + half
        if target in (State.confirmed, State.lab_verified):
            assert kind == "pass" and inside
        if target is State.confirmed_adjusted:
            assert kind == "pass" and not inside
        if target is State.refuted:
            assert kind == "fail"
        state = decision.state
        refuted = refuted or state is State.refuted
    assert not refuted or state is State.refuted


def test_a_claim_is_judged_on_the_figure_of_its_own_formula(sealed) -> None:
    """The figure that judges a claim is the record's figure of the formula the claim's
    words name, whatever order the verification lists its figures in (here the lab's
    legacy 100-token figure first)."""
    rid, record = sealed
    by = {m.formula.rsplit(" of ", 1)[1]: m.name for s in record.predicate.results
          for m in s.metrics.values()
          if m.name.startswith("decode_tok_s") and m.name.endswith(".median")}
    assert set(by) == {"99 / (t[99] - t[0])", "100 / (t[99] - t[0])"}
    figures = [Figure(metric=f"tiny-cold/{by[f]}", value=v, low=v - 1, high=v + 1, record=rid)
               for f, v in (("100 / (t[99] - t[0])", 80.0), ("99 / (t[99] - t[0])", 100.0))]
    checks = [Check(name="identity", result=Result.passed),
              Check(name="contract", result=Result.passed),
              Check(name="performance", result=Result.passed, figures=figures)]
    v = verification({"original": rid, "reproduction": rid}, checks,
                     policy=Policy(name="reproduce", uri="x"), verifier=Verifier(id="t", key="k"))
    evidence = Evidence(verification_id="0" * 64, verification=v, record_id=rid, record=record)
    decision = decide(State.submitted, State.confirmed, BODY, evidence, {"runtime": "x"})
    assert decision.figure is not None and decision.figure.value == 100.0


# ---- evidence levels in review ----

def test_review_reports_the_level_and_why(cli, store_home, records, tmp_path) -> None:
    import shutil

    from registry.seal import seal_run
    from registry.signing.keys import create_key
    from tests.conftest import ROOT

    run = shutil.copytree(ROOT / "tests/data/cpu-runs/tiny-bf16-kv", tmp_path / "captured")
    captured = seal_run(run, home=store_home).id
    review = ok_or(cli("review", captured, "--json", "--no-seal"))
    assert review["verdict"] != "reject", review
    assert review["evidence_level"] == {"level": "cpu-tested",
                                        "reason": "signed by a lab key; not reproduced yet"}
    assert review["findings"][-1]["part"] == "evidence level"
    rejected = ok_or(cli("review", records["a"], "--json", "--no-seal"))
    assert rejected["verdict"] == "reject"
    assert rejected["evidence_level"]["level"] == "invalid"
    assert rejected["evidence_level"]["reason"].startswith("identity: ")
    other = create_key(tmp_path / "other")
    (tmp_path / "o.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "o.pub").exit_code == 0
    assert cli("claim", "lab-key", other.keyid).exit_code == 0
    outside = ok_or(cli("review", captured, "--json", "--no-seal"))["evidence_level"]
    assert outside["level"] == "community-reported"
    text = cli("review", captured, "--no-seal").stdout
    assert "evidence level" in text and "community-reported" in text


# ---- two homes ----

def test_claims_travel_and_concurrent_moves_do_not_fork(cli, database_url, team,  # noqa: F811
                                                        tmp_path, monkeypatch) -> None:
    """Alice registers and pushes; Bob pulls and sees it verified. Both then advance it
    from the same event; Bob's push replays his event beside hers: every home keeps the
    same first move and reports the other as a conflict, never applied."""
    from tests.test_team import act, add_remote

    alice, bob = team
    url = str(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, None, create=True)
    ok(cli("claim", "add", "tiny", "--value", "1", *CLAIM))
    assert cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, None)
    assert cli("pull").exit_code == 0
    assert ok(cli("claim", "show", "tiny", "--json"))["status"] == "submitted"
    act(monkeypatch, alice)
    ok(cli("claim", "advance", "tiny", "--to", "queued"))
    assert cli("push").exit_code == 0
    act(monkeypatch, bob)
    ok(cli("claim", "advance", "tiny", "--to", "reproducing"))
    r = cli("push")
    assert r.exit_code == 0, r.stderr
    seen = []
    for member in (bob, alice):
        act(monkeypatch, member)
        if member is alice:
            assert cli("pull").exit_code == 0
        shown = ok(cli("claim", "show", "tiny", "--json"))
        seen.append((shown["status"], len(shown["events"]), len(shown["conflicts"])))
        assert ok_or(cli("verify", "--all", "--json"))["exit_code"] == 0
    assert seen[0] == seen[1] and seen[0][1:] == (2, 1)
