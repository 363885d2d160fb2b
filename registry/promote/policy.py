"""A promotion policy: the gates a record must pass before it is promoted, and the
thresholds of the realistic final gate. TOML, `schema = "registry.promotion-policy/v1"`;
the lab's policy (its six attestation gates and its final gate) ships with the registry
as `lab-b70.toml` and is the default.
"""

from __future__ import annotations

from enum import StrEnum
from importlib import resources
from pathlib import Path

from pydantic import Field, ValidationError

from registry.base.model import Frozen
from registry.base.safeload import loads_toml
from registry.errors import InvalidInput
from registry.promote.finalgate import FinalGateRules

SCHEMA = "registry.promotion-policy/v1"
SHIPPED = "lab-b70.toml"


class Gate(StrEnum):
    """Each gate under the name the lab's promotion attestation gives it."""

    final = "realistic_final_gate"
    varied_task_quality = "varied_task_quality_passed"
    oracle = "exact_or_target_oracle_passed"
    deterministic_repeats = "deterministic_repeats_passed"
    fresh_server_repeat = "fresh_server_repeat_passed"
    target_model_unchanged = "target_model_unchanged"
    no_quality_loss = "no_quality_loss"


class PromotionPolicy(Frozen):
    schema_: str = Field(alias="schema")
    name: str
    uri: str = Field("docs/promotion.md", description="where the rules are written")
    gates: list[Gate] = Field(min_length=1)
    final_gate: FinalGateRules = Field(default_factory=FinalGateRules)


def load_policy(path: Path | None = None) -> PromotionPolicy:
    """The policy at `path`, or the shipped lab policy; a bad file is one clear error."""
    if path is None:
        data = resources.files("registry.promote").joinpath(SHIPPED).read_bytes()
        where = SHIPPED
    else:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise InvalidInput(f"{path}: {e.strerror or 'cannot read'}") from None
        where = str(path)
    try:
        raw = loads_toml(data)
    except ValueError as e:
        raise InvalidInput(f"{where}: not a TOML file ({e})") from None
    if raw.get("schema") != SCHEMA:
        raise InvalidInput(f"{where}: schema must be {SCHEMA!r}",
                           hint="see docs/promotion.md for the policy format")
    try:
        return PromotionPolicy.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(f"{where}: {field}: {first['msg']}") from None
