"""What a record says of each secret taken out of it before hashing: a model alone, so
a reader of records loads it without the scanner's patterns (registry/base/secrets.py)."""

from pydantic import Field

from registry.base.model import Frozen


class Redaction(Frozen):
    """One secret taken out of a file before it was hashed."""
    file: str = Field(description="the file (or statement field) it was in")
    line: int = Field(description="its 1-based line number (0: a statement field)")
    kind: str = Field(description="name, url-userinfo, token or private-key")
    why: str = Field(description="what made it a secret, e.g. `HF_TOKEN is a secret's name`")
