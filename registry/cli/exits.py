"""Exit codes of the commands that judge: the one map from a library result (a
verify report, a review, a check, a reproduction, a re-resolution) to the codes
docs/cli.md documents.

The library says what it found (a problem is `wrong` or `unverifiable`, a review is
`reject`, a verdict `refused`); only the command line turns that into a number, and
its `--json` carries the number beside the result so scripts need not re-derive it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from registry.errors import ExitCode

if TYPE_CHECKING:
    from pydantic import BaseModel

    from registry.ab.result import AbResult
    from registry.contracts.check import CheckResult
    from registry.importer.folder import Problem as ImportProblem
    from registry.reproduce import Reproduction
    from registry.review import Review
    from registry.review.reresolve import Reresolved
    from registry.store.shown import ShownRecord
    from registry.store.verify import VerifyReport


def verified(report: VerifyReport) -> ExitCode:
    """1 when anything is wrong, else 3 when anything could not be checked, else 0."""
    worst = report.worst
    if worst is None:
        return ExitCode.OK
    return ExitCode.FAILED if worst.name == "wrong" else ExitCode.UNVERIFIABLE


def reviewed(review: Review) -> ExitCode:
    return {"accept": ExitCode.OK, "reject": ExitCode.FAILED,
            "needs_evidence": ExitCode.UNVERIFIABLE}[review.verdict.name]


def checked(result: CheckResult) -> ExitCode:
    """1 when the verdict failed or the rows changed after sealing, 6 refused, else 0."""
    status = result.verdict.status.name if result.verdict else None
    if result.problems or status == "failed":
        return ExitCode.FAILED
    return ExitCode.REFUSED if status == "refused" else ExitCode.OK


def reproduced(done: Reproduction) -> ExitCode:
    """0 passed; 6 when the environment drifted (a dry run says so); 1 otherwise."""
    if done.passed:
        return ExitCode.OK
    return ExitCode.REFUSED if done.environment.refused else ExitCode.FAILED


def shown(record: ShownRecord) -> ExitCode:
    """0 when the record is what was sealed; 1 when it is not (a bad signature, a changed
    artifact), 3 when that cannot be told (an untrusted signer, a missing artifact)."""
    if not record.check.ok:
        return ExitCode.UNVERIFIABLE if record.check.trust.value == "untrusted" \
            else ExitCode.FAILED
    if record.artifacts_changed:
        return ExitCode.FAILED
    return ExitCode.UNVERIFIABLE if record.artifacts else ExitCode.OK


def compared(result: AbResult) -> ExitCode:
    """4 when the sides (or, once run, their outputs) are not comparable, else 0."""
    return ExitCode.OK if result.comparable else ExitCode.INVALID_INPUT


def reresolved(report: Reresolved) -> ExitCode:
    return ExitCode.OK if report.reproduced else ExitCode.FAILED


def raised(problem: ImportProblem) -> ExitCode:
    """The code of the registry error a capsule's import raised."""
    from registry import errors

    kind: type[errors.RegistryError] = getattr(errors, problem.error)
    return kind.exit_code


def with_code(result: BaseModel, code: ExitCode) -> dict[str, Any]:
    """The result as `--json` prints it: its fields (nulls left out) and `exit_code`."""
    from registry.base.canonical import to_jsonable

    return {**to_jsonable(result), "exit_code": int(code)}


def leave(code: ExitCode) -> None:
    """End the command with `code` (0 returns normally)."""
    if code:
        raise typer.Exit(int(code))
