"""Statements: canonical bytes, ids, and old records that must keep parsing."""

from __future__ import annotations

import hashlib
import json

import pytest
import rfc8785

from registry.errors import NotFound, VerificationFailed
from registry.formats.figures import Metric
from registry.formats.identity import Evidence, ResolvedField, ResolvedIdentity, Status
from registry.formats.record import (
    Predicate,
    RunInfo,
    Statement,
    Subject,
    SuiteResult,
    match_id,
    parse_statement,
    record_id,
    statement_bytes,
    summary_line,
)

EXPECTED = (
    b'{"_type":"https://in-toto.io/Statement/v1","predicate":{"artifacts":{"server.log":"server.log"},'
    b'"environment":{"host":{},"sealed_with":{},"variables":{}},"identity":{"errors":[],"expect":[],'
    b'"fields":{"precision.kv_cache":{"declared":"bfloat16","evidence":[{"line":7,"source":"server.log",'
    b'"text":"kv_cache_dtype=bfloat16"}],"resolved":"bfloat16","self_reported":false,"status":"confirmed"}},'
    b'"schema":"registry.resolved-identity/v1"},"overrides":[],"results":[{"errors":0,'
    b'"formula":"99 / (t[99] - t[0])","metrics":{"decode_tok_s.median":{"count":13,'
    b'"formula":"median over rows of 99 / (t[99] - t[0])","name":"decode_tok_s.median",'
    b'"unit":"tok/s",'
    b'"value":101.94172124017027}},"rows":13,"suite":"s","window":100}],'
    b'"run":{"sealed_at":"2026-07-26T21:50:00.000000+00:00","state":"complete"},"sources":[]},'
    b'"predicateType":"https://registry.dev/serving-record/v1","subject":[{"digest":{"sha256":"'
    + b"ab" * 32 + b'"},"name":"server.log"}]}'
)


def statement() -> Statement:
    evidence = Evidence(source="server.log", line=7, text="kv_cache_dtype=bfloat16")
    kv = ResolvedField(declared="bfloat16", resolved="bfloat16", status=Status.confirmed,
                       evidence=[evidence])
    metric = Metric(name="decode_tok_s.median", value=101.94172124017027, unit="tok/s",
                    formula="median over rows of 99 / (t[99] - t[0])", count=13)
    return Statement(
        subject=[Subject(name="server.log", digest={"sha256": "ab" * 32})],
        predicate=Predicate(
            identity=ResolvedIdentity(fields={"precision.kv_cache": kv}),
            results=[SuiteResult(suite="s", rows=13, formula="99 / (t[99] - t[0])", window=100,
                                 metrics={metric.name: metric})],
            run=RunInfo(state="complete", sealed_at="2026-07-26T21:50:00.000000+00:00"),
            artifacts={"server.log": "server.log"},
        ),
    )


def test_statement_bytes_are_canonical_and_deterministic() -> None:
    data = statement_bytes(statement())
    assert data == statement_bytes(statement())
    assert rfc8785.dumps(json.loads(data)) == data  # already canonical: sorted, compact
    assert record_id(data) == hashlib.sha256(data).hexdigest()


def test_a_statement_sealed_before_identity_notes_existed_still_parses() -> None:
    """EXPECTED was sealed before `ResolvedIdentity.notes` was added: a ledger keeps
    old records, so models may gain defaulted fields but must still read them."""
    assert record_id(EXPECTED) == "d27534467217bd42f737aa51ca2167fd1f43a5a07c853d5cde9b85b6bd508594"
    parsed = parse_statement(EXPECTED)
    assert parsed == statement()
    assert parsed.predicate.results[0].metrics["decode_tok_s.median"].value == 101.94172124017027


@pytest.mark.parametrize("data", [
    b"{}", b"not json", EXPECTED.replace(b"Statement/v1", b"Statement/v0"),
])
def test_not_a_statement(data) -> None:
    with pytest.raises(VerificationFailed, match="statement: not a serving record"):
        parse_statement(data)


def test_summary_line_names_the_precisions() -> None:
    # no engine start in its identity: the summary marks it (registry/seal/proof.py)
    assert summary_line(statement().predicate) == (
        "UNPROVEN -: ? weights=? kv=bfloat16 tp=? engine=?")


def test_match_id() -> None:
    ids = ["abcd1234", "abcd9999", "ffff0000"]
    assert match_id("ffff", ids) == "ffff0000"
    assert match_id("ABCD12", ids) == "abcd1234"
    with pytest.raises(NotFound, match="ambiguous: abcd1234, abcd9999"):
        match_id("abcd", ids)
    with pytest.raises(NotFound, match="too short"):
        match_id("ff", ids)
    with pytest.raises(NotFound, match="no record 0"):
        match_id("0", ids)
