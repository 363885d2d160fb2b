"""Property: any single-byte change to any part of a sealed record (each artifact
object, the statement, the envelope) is found by verify and named."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registry.errors import Failure
from registry.store.ledger import folder_at
from registry.store.objects import ObjectStore
from registry.store.verify import verify_records

SEALED: dict[Path, str] = {}


def record_parts(home, record_id: str) -> dict[str, Path]:
    folder = folder_at(home.ledger, record_id)
    statement = json.loads((folder / "statement.json").read_bytes())
    objects = ObjectStore(home.objects)
    parts = {f"artifact {s['name']}": objects.path(s["digest"]["sha256"])
             for s in statement["subject"]}
    return parts | {"statement": folder / "statement.json", "envelope": folder / "envelope.json"}


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_single_byte_change_is_found(store_home, make_run, seal_run_dir, data) -> None:
    if store_home.root not in SEALED:  # one record per home, shared by the examples
        SEALED[store_home.root] = seal_run_dir(make_run()).id
    rid = SEALED[store_home.root]
    targets = record_parts(store_home, rid)
    part = data.draw(st.sampled_from(sorted(targets)), label="part")
    path = targets[part]
    original = path.read_bytes()
    offset = data.draw(st.integers(0, len(original) - 1), label="offset")
    mask = data.draw(st.integers(1, 255), label="xor")
    mode = path.stat().st_mode
    changed = bytearray(original)
    changed[offset] ^= mask
    path.chmod(0o644)
    path.write_bytes(bytes(changed))
    try:
        [check] = verify_records(store_home, rid).records
        named = {p.part for p in check.problems}
        assert not check.verified
        assert part in named
        allowed = {part, "signature"} if part == "envelope" else {part}  # a flipped key id
        assert named <= allowed, (part, check.problems)
        assert any(p.failure is Failure.wrong for p in check.problems if p.part == part)
    finally:
        path.write_bytes(original)
        path.chmod(mode)
    assert verify_records(store_home, rid).worst is None
