"""The one base of every model the registry parses or writes: frozen, and strict about
the fields it knows (docs/formats.md says how a signed format evolves)."""


from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """A frozen model that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)
