"""A review's verdict as a verification attestation: the reviewed record as its
subject, each finding as a check (ok and note: PASSED, reject: FAILED, needs evidence:
INCONCLUSIVE), the record's decode figures as what it judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.formats.verification import (
    Check,
    Result,
    VerificationStatement,
    attestation,
    decode_figures,
)

if TYPE_CHECKING:
    from registry.formats.record import Statement
    from registry.review import Review

POLICY_URI = "docs/cli.md#registry-review"
_RESULT = {"ok": Result.passed, "note": Result.passed, "reject": Result.failed,
           "needs evidence": Result.inconclusive}


def review_statement(review: Review, statement: Statement | None, keyid: str
                     ) -> VerificationStatement:
    """The attestation of `review`; `statement` is the reviewed record's, when it verified
    (its figures are then the ones the review re-derived)."""
    checks = [Check(name=f.part, result=_RESULT[f.status.value],
                    detail=("note: " if f.status.value == "note" else "") + f.detail)
              for f in review.findings]
    figures = [] if statement is None or not any(
        f.part == "figures" and f.status.value == "ok" for f in review.findings) else \
        decode_figures(statement, review.id)
    if figures:
        checks = [c.model_copy(update={"figures": figures}) if c.name == "figures" else c
                  for c in checks]
    return attestation("review", {"reviewed": review.id}, checks, uri=POLICY_URI, keyid=keyid,
                       parameters={"decision": review.verdict.value})
