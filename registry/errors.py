"""One base error for everything a user can cause, each with a documented exit code.

The CLI catches `RegistryError` once and prints `message` (and `hint`) without a
traceback. Exit codes are part of the interface: see docs/cli.md.
"""

from __future__ import annotations

import warnings
from enum import IntEnum, StrEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1  # the thing checked is wrong: tampered record, contract failed, verdict failed
    USAGE = 2  # bad command line (typer's own code)
    UNVERIFIABLE = 3  # verification could not run: missing object, unknown key
    INVALID_INPUT = 4  # malformed recipe, checkpoint, log, run directory
    NOT_FOUND = 5  # unknown or ambiguous record id, missing home
    REFUSED = 6  # identity mismatch, environment drift, incomparable records
    ENGINE = 7  # the engine failed to start, crashed or timed out
    INTERNAL = 70  # a bug in registry (EX_SOFTWARE): one message, never a traceback
    INTERRUPTED = 130
    CLOSED_OUTPUT = 141  # the reader closed stdout (`registry list | head`): quiet, as git


class Failure(StrEnum):
    """What a problem means: the part is wrong, or it could not be checked at all."""

    wrong = "wrong"
    unverifiable = "unverifiable"


class RegistryError(Exception):
    """An error a user can cause and fix: rendered as one message, never a traceback."""

    exit_code: ExitCode = ExitCode.INVALID_INPUT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        if not message:
            raise ValueError("a RegistryError needs a message")
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


def error_name(e: RegistryError) -> str:
    """The name of the class of this module that `e` is (a subclass defined elsewhere
    is named by its base here), for reports that keep an error as data."""
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == __name__)


class UsageError(RegistryError):
    """A command line the registry cannot act on (options that exclude each other)."""

    exit_code = ExitCode.USAGE


class InvalidInput(RegistryError):
    exit_code = ExitCode.INVALID_INPUT


class InvalidRecipe(InvalidInput):
    """A recipe file that cannot be loaded: names the file, the key and the problem."""

    def __init__(self, path: object, key: str | None, problem: str, *, hint: str | None = None):
        where = f"{path}: {key}" if key else f"{path}"
        super().__init__(f"{where}: {problem}", hint=hint)
        self.path = path
        self.key = key
        self.problem = problem


class NotFound(RegistryError):
    exit_code = ExitCode.NOT_FOUND


class VerificationFailed(RegistryError):
    exit_code = ExitCode.FAILED


class Unverifiable(RegistryError):
    exit_code = ExitCode.UNVERIFIABLE


class NewerFormat(Unverifiable):
    """A document of a newer major format version than this registry reads: it cannot
    judge it, so it refuses it (docs/formats.md)."""

    kind = "newer-format"  # registry.signing.failures.Kind.newer_format

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint or "upgrade registry: this was written by a "
                                               "newer version (docs/formats.md)")


class Refused(RegistryError):
    exit_code = ExitCode.REFUSED


class EngineFailed(RegistryError):
    exit_code = ExitCode.ENGINE


class RegistryWarning(UserWarning):
    """Something a user should fix that does not stop the command (a root of trust
    others can write). The CLI prints it as one `warning:` line on stderr."""


warnings.filterwarnings("always", category=RegistryWarning)  # callers warn once themselves
