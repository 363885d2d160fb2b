"""Format versions of the documents a registry signs: a newer major version is refused
("upgrade registry"), fields that a newer minor version adds are accepted and kept
(docs/formats.md).

A signed document names its format with a versioned type (`registry.keyring/v1`,
`https://registry.dev/serving-record/v1`, `registry.teacher/v1`). A reader parses it
with `WIRE`, pydantic's per-call `extra="allow"`: a field it does not know is kept on
the model (`model_extra`), never an error, so a teammate on a newer version that adds
an optional field does not break anyone's pull. The signed bytes themselves are never
re-serialized: the ledger keeps them as they were signed, and every digest and
signature is checked over those bytes.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from registry.errors import NewerFormat

WIRE: Final[Literal["allow"]] = "allow"  # `extra` for model_validate of a signed document
_VERSION = re.compile(r"v([0-9]{1,6})\Z")


def refuse_newer(document: Any, field: str, prefix: str, known: int, where: str) -> None:
    """Refuse `document` when its `field` is `prefix` + `v<N>` with N above `known`
    (any other value is left to the model, which says what is wrong with it)."""
    value = document.get(field) if isinstance(document, dict) else None
    if not isinstance(value, str) or not value.startswith(prefix):
        return
    found = _VERSION.fullmatch(value[len(prefix):])
    if found and int(found.group(1)) > known:
        raise NewerFormat(f"{where}: {value} is a newer format than this registry reads "
                          f"({prefix}v{known})")
