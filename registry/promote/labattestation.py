"""A lab promotion attestation (`neural.download.promotion-attestation.v1`, the lab's
docs/promotion-attestation.md) judged the way the lab's own checker judges it: the
performance file it names is the one submitted and still hashes as bound; the identity
strings are present (and the revisions the expected ones, when given); each of the six
gates is literally `true`; every quality evidence file exists inside the repository,
re-hashes as bound and supports known gates; every gate is supported by some evidence.
It fails closed, listing every code (the lab's own names), never a stored `passed`.

The attestation is someone else's file: every path it names must stay inside the
repository folder it is judged in (`registry/base/confine.py`); one that leaves it is a
failure of its own, and nothing outside is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.confine import inside
from registry.base.files import read_json_value
from registry.base.hashing import sha256_file
from registry.base.model import Frozen, empty_list
from registry.errors import InvalidInput
from registry.promote.policy import Gate

SCHEMA = "neural.download.promotion-attestation.v1"
LAB_GATES = tuple(g.value for g in Gate if g is not Gate.final)
IDENTITY = ("model_revision", "runtime_revision", "optimization_identity")


class LabGate(Frozen):
    name: str
    stated: Any = Field(description="what the file says, verbatim (only `true` passes)")
    supported_by: list[str] = Field(default_factory=empty_list,
                                    description="evidence paths that bind it, re-hashed")


class LabAttestationJudgement(Frozen):
    path: str
    passed: bool
    failures: list[str] = Field(default_factory=empty_list, description="the lab's codes")
    gates: list[LabGate] = Field(default_factory=empty_list)
    status: str | None = Field(None, description="the file's own status line, verbatim")


def judge_lab_attestation(path: Path, root: Path, performance: Path | None = None, *,
                          model_revision: str | None = None,
                          runtime_revision: str | None = None) -> LabAttestationJudgement:
    """Judge the attestation at `path`, its evidence paths taken inside `root` (the
    lab's repository checkout); `performance` is the submitted performance file
    (default: the one the attestation names)."""
    data = read_json_value(path, "promotion attestation")
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: a promotion attestation is a JSON object")
    failures: list[str] = []
    if data.get("schema") != SCHEMA:
        failures.append("schema_mismatch")
    failures += _performance(data.get("performance_evidence"), root, performance)
    failures += _identity(_object(data.get("identity")), model_revision, runtime_revision)
    gates = _object(data.get("gates"))
    failures += [f"gate_{g}_not_true" for g in LAB_GATES if gates.get(g) is not True]
    evidence_failures, support = _evidence(data.get("quality_evidence"), root)
    failures += evidence_failures
    status = data.get("status")
    return LabAttestationJudgement(
        path=str(path), passed=not failures, failures=failures,
        gates=[LabGate(name=g, stated=gates.get(g), supported_by=support.get(g, []))
               for g in LAB_GATES],
        status=status if isinstance(status, str) else None)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _performance(bound: Any, root: Path, submitted: Path | None) -> list[str]:
    bound = _object(bound)
    named = bound.get("path")
    if not isinstance(named, str):
        return ["performance_evidence_path_missing"]
    try:
        path = inside(root, named)
    except InvalidInput:
        return ["performance_evidence_path_outside_repository"]
    out = []
    if submitted is not None and submitted.resolve() != path:
        out.append("performance_evidence_path_mismatch")
    target = submitted or path
    if not target.is_file():
        out.append("performance_evidence_missing")
    elif sha256_file(target) != bound.get("sha256"):
        out.append("performance_evidence_hash_mismatch")
    return out


def _identity(identity: dict[str, Any], model: str | None, runtime: str | None) -> list[str]:
    out = [f"identity_{k}_missing" for k in IDENTITY
           if not isinstance(identity.get(k), str) or not identity[k].strip()]
    if model and identity.get("model_revision") != model:
        out.append("model_revision_mismatch")
    if runtime and identity.get("runtime_revision") != runtime:
        out.append("runtime_revision_mismatch")
    return out


def _evidence(items: Any, root: Path) -> tuple[list[str], dict[str, list[str]]]:
    """Failures of the quality evidence, and gate -> the paths that bind it (those that
    exist and re-hash as bound; a missing file is its own failure)."""
    if not isinstance(items, list) or not items:
        return ["quality_evidence_missing"], {}
    out: list[str] = []
    support: dict[str, list[str]] = {}
    claimed: set[str] = set()  # as the lab's checker counts: a named file binds a gate
    for index, item in enumerate(items):
        item = _object(item)
        named, digest, supports = item.get("path"), item.get("sha256"), item.get("supports")
        if not isinstance(named, str) or not isinstance(digest, str):
            out.append(f"quality_evidence_{index}_identity_missing")
            continue
        gates = supports if isinstance(supports, list) else []
        valid = bool(gates) and all(s in LAB_GATES for s in gates)
        if valid:
            claimed.update(gates)
        else:
            out.append(f"quality_evidence_{index}_supports_invalid")
        problem = _file_problem(root, named, digest)
        if problem:
            out.append(f"quality_evidence_{index}_{problem}")
        elif valid:
            for gate in gates:
                support.setdefault(gate, []).append(named)
    out += [f"gate_{g}_has_no_bound_evidence" for g in LAB_GATES if g not in claimed]
    return out, support


def _file_problem(root: Path, named: str, digest: str) -> str | None:
    try:
        path = inside(root, named)
    except InvalidInput:
        return "outside_repository"
    if not path.is_file():
        return "missing"
    return None if sha256_file(path) == digest else "hash_mismatch"
