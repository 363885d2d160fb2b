"""A teacher: the reference rows of a lane's bitwise contract, bound to the axes that
decide its numbers (weight, draft and KV precision, KV scales, model revision, suite),
and to the kernel that produced them (attention backend, graph mode, engine version,
container image): an oracle belongs to the kernel that produced it, so a run on another
kernel is judged against an oracle regenerated there, never against this one.

A teacher comes from a sealed record (its bench rows) or from the lab's compact
oracle files (token ids + text sha256). Either way it is only a reference for runs
whose binding axes equal its own: BF16 token hashes are never an FP8 gate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.formats.identity import ResolvedIdentity, Status
from registry.formats.rundir import BenchRow, read_model
from registry.recipe.schema import NAME_RE, Recipe

# The axes a teacher is bound to, in the order refusals name them.
IDENTITY_AXES = (
    "precision.weights", "precision.draft_weights", "precision.kv_cache",
    "precision.kv_scales", "model.revision",
)
SUITE_AXIS = "suite.sha256"
# The matmuls' input precision (W8A8 vs W8A16 on the same fp8 weights gives other tokens).
# A teacher made before the axis was bound (schema v1 without it), or whose activations
# were unresolved or undeclared then, names none and binds none: `binds` says so.
ACTIVATION_AXIS = "precision.activations"
AXES = (*IDENTITY_AXES, ACTIVATION_AXIS, SUITE_AXIS)
KERNEL_AXES = (
    "attention.backend", "graph.compilation_mode", "graph.cudagraph_mode", "engine.version",
    "container.image",
)
UNQUANTIZED_KV = ("bfloat16", "float16", "float32")

Axes = dict[str, str | None]


class TeacherRow(Frozen):
    index: int
    prompt_id: str
    prompt_sha256: str
    token_ids: list[int]
    text_sha256: str


class TeacherSource(Frozen):
    kind: Literal["record", "lab-oracles"]
    ref: str = Field(description="record id, or the digest of the teacher run the oracles name")
    files: dict[str, str] = Field(default_factory=dict, description="imported file -> sha256")


class Teacher(Frozen):
    schema_: str = Field("registry.teacher/v1", alias="schema")
    lane: str = Field(pattern=NAME_RE)
    source: TeacherSource
    axes: Axes = Field(description="every binding axis -> value (None: the run had none)")
    rows: list[TeacherRow] = Field(min_length=1)
    kernel: Axes | None = Field(None, description=(
        "kernel axis -> value proven when it was made; None: a teacher that names no kernel "
        "(a lab oracle, or one set before kernels were bound), bound to none"))


    @field_validator("axes", mode="before")
    @classmethod
    def _every_axis(cls, axes: Any) -> Any:
        if isinstance(axes, dict) and ACTIVATION_AXIS not in axes:
            axes = {**axes, ACTIVATION_AXIS: None}  # a teacher bound before the axis was
        if not isinstance(axes, dict) or set(axes) != set(AXES):
            raise ValueError(f"axes must name exactly {list(AXES)}, got {sorted(axes)}")
        return axes

    @field_validator("rows")
    @classmethod
    def _one_row_per_index(cls, rows: list[TeacherRow]) -> list[TeacherRow]:
        indices = [r.index for r in rows]
        if len(indices) != len(set(indices)):
            raise ValueError(f"row indices must be unique, got {indices}")
        return rows

    @property
    def suite_sha256(self) -> str | None:
        return self.axes[SUITE_AXIS]


def binding_axes(identity: ResolvedIdentity, suite_sha256: str | None) -> Axes:
    """A run's binding axes: the resolved (proven) values, never the declared ones; an
    unresolved field is None even when the resolver knows part of it."""
    return {**{a: _text(_proven(identity, a)) for a in (*IDENTITY_AXES, ACTIVATION_AXIS)},
            SUITE_AXIS: suite_sha256}


def binds(axis: str, teacher_value: str | None) -> bool:
    """Whether the teacher's value on `axis` binds a run: every axis does, but the
    activation axis only where the teacher names a value."""
    return axis != ACTIVATION_AXIS or teacher_value is not None


def kernel_axes(identity: ResolvedIdentity) -> Axes:
    """The kernel a run's numbers came from, as proven (None where unresolved)."""
    return {a: _text(_proven(identity, a)) for a in KERNEL_AXES}


def _proven(identity: ResolvedIdentity, name: str) -> Any:
    field = identity.fields.get(name)
    return None if field is None or field.status is Status.unresolved else field.resolved


def declared_axes(recipe: Recipe, given: Mapping[str, str | None]) -> Axes:
    """Axes from a recipe's declarations, for references that carry no resolved identity
    (the lab's oracle files): `given` fills or overrides; nothing is guessed."""
    unknown = sorted(set(given) - set(AXES))
    if unknown:
        raise InvalidInput(f"unknown binding axis {unknown[0]!r}", hint=f"axes: {', '.join(AXES)}")
    p = recipe.precision
    kv = None if p.kv_cache == "checkpoint" else p.kv_label()
    suites = [s.sha256 for s in recipe.benchmark.suites]
    axes: Axes = {
        "precision.weights": p.weights,
        "precision.draft_weights": p.draft_weights,
        "precision.kv_cache": kv,
        # a recipe's `activations` is the model dtype, not the matmuls' input: unbound
        # unless given (`--axis precision.activations=fp8`)
        ACTIVATION_AXIS: None,
        # the resolver's word for an unquantized cache (registry/engines/vllm/resolve/kv.py)
        "precision.kv_scales": "n/a" if kv in UNQUANTIZED_KV else None,
        "model.revision": recipe.model.revision,
        SUITE_AXIS: suites[0] if len(suites) == 1 else None,
        **given,
    }
    missing = [a for a in ("precision.kv_cache", "precision.kv_scales", SUITE_AXIS)
               if axes[a] is None]
    if missing:
        raise InvalidInput(f"recipe {recipe.name}: {', '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not declared as one value",
                           hint="give " + " ".join(f"--axis {a}=VALUE" for a in missing))
    return axes


def row_text_sha256(row: BenchRow) -> str | None:
    """Re-derived from the text when the row has it; the stored digest otherwise."""
    if row.text is not None:
        return hashlib.sha256(row.text.encode("utf-8")).hexdigest()
    return row.text_sha256


def teacher_from_rows(lane: str, rows: Sequence[BenchRow], axes: Mapping[str, str | None],
                      source: TeacherSource, kernel: Axes | None = None) -> Teacher:
    """A teacher from a record's raw rows; each row needs its token ids and text digest."""
    reference = []
    for row in rows:
        digest = row_text_sha256(row)
        if digest is None or not row.token_ids or row.error:
            raise InvalidInput(
                f"row {row.index} ({row.prompt_id}) cannot be a reference: "
                + (row.error or "no token ids or output text"),
                hint="a teacher needs complete rows: token ids and text for every prompt")
        reference.append(TeacherRow(index=row.index, prompt_id=row.prompt_id,
                                    prompt_sha256=row.prompt_sha256,
                                    token_ids=row.token_ids, text_sha256=digest))
    return _teacher(lane=lane, source=source, axes=dict(axes), rows=reference, kernel=kernel)


class _TokenRow(BaseModel):
    prompt_index: int
    prompt_id: str
    prompt_sha256: str
    token_ids: list[int]


class _TextRow(BaseModel):
    prompt_index: int
    prompt_id: str
    sha256: str


class _TokenOracle(BaseModel):
    source_sha256: str = Field(description="digest of the teacher bench these rows came from")
    rows: list[_TokenRow] = Field(min_length=1)


class _TextOracle(BaseModel):
    source_sha256: str
    rows: list[_TextRow] = Field(min_length=1)


def teacher_from_lab_oracles(token_oracle: Path, text_oracle: Path,
                             axes: Mapping[str, str | None], *, lane: str) -> Teacher:
    """Import the lab's token-id and text-sha256 oracles (one teacher run) as a teacher."""
    tokens, texts = read_model(token_oracle, _TokenOracle), read_model(text_oracle, _TextOracle)
    if tokens.source_sha256 != texts.source_sha256:
        raise InvalidInput(
            f"{token_oracle} and {text_oracle} come from different teacher runs "
            f"({tokens.source_sha256[:12]} vs {texts.source_sha256[:12]})",
            hint="import the two oracle files written from the same teacher bench")
    digests = {(r.prompt_index, r.prompt_id): r.sha256 for r in texts.rows}
    keys = [(r.prompt_index, r.prompt_id) for r in tokens.rows]
    if sorted(keys) != sorted(digests):
        raise InvalidInput(
            f"{token_oracle.name} and {text_oracle.name} cover different prompts: "
            f"{sorted(set(keys) ^ set(digests))}",
            hint="the two oracles must list the same (prompt_index, prompt_id) rows")
    rows = [TeacherRow(index=r.prompt_index, prompt_id=r.prompt_id, prompt_sha256=r.prompt_sha256,
                       token_ids=r.token_ids, text_sha256=digests[key])
            for r, key in zip(tokens.rows, keys, strict=True)]
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in (token_oracle, text_oracle)}
    source = TeacherSource(kind="lab-oracles", ref=tokens.source_sha256, files=files)
    return _teacher(lane=lane, source=source, axes=dict(axes), rows=rows)


def _teacher(**fields: Any) -> Teacher:
    """Validate into a Teacher, turning a schema problem into one clear message."""
    from pydantic import ValidationError

    try:
        return Teacher(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InvalidInput(f"teacher for lane {fields.get('lane')!r}: {where}: {err['msg']}",
                           hint=f"binding axes are {', '.join(AXES)}") from None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
