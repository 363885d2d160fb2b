"""The one base of every model the registry parses or writes: frozen, and strict about
the fields it knows (docs/formats.md says how a signed format evolves)."""

from typing import Any

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """A frozen model that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)


def empty_list() -> list[Any]:
    """The default of a list field, `Field(default_factory=empty_list)`: the same as
    `default_factory=list`, and cheaper to build a schema with. Pydantic asks every
    default factory for its signature, and `inspect.signature(list)` parses the
    builtin's text signature (130 us; a Python function's takes 8 us): about 30 of
    them on a record reader's path."""
    return []
