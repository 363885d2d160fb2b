"""Canonical JSON (RFC 8785) and the digests taken over it.

Every digest in the registry (record ids, recipe digests, manifest digests) is the
sha256 of these bytes, so the same content always gives the same id.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import rfc8785
from pydantic import BaseModel


def to_jsonable(value: Any) -> Any:
    """Plain JSON types for a pydantic model (or anything holding models)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 bytes: sorted keys, no insignificant whitespace, ECMAScript numbers."""
    return rfc8785.dumps(to_jsonable(value))


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """sha256 of the canonical bytes of `value`."""
    return sha256_hex(canonical_bytes(value))


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_GIT_SHA = re.compile(r"[0-9a-f]{40}")


def is_sha256(value: str) -> bool:
    """64 lowercase hex digits: a record id, a key id, an object's digest."""
    return _SHA256_HEX.fullmatch(value) is not None


def is_git_sha(value: str) -> bool:
    """40 lowercase hex digits: a git commit, as git prints it."""
    return _GIT_SHA.fullmatch(value) is not None
