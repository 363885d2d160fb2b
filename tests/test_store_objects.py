"""The content-addressed store: layout, dedup, atomic read-only objects, corruption
detected, a source changing while stored refused."""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

from registry.errors import InvalidInput
from registry.store.objects import ObjectState, ObjectStore


@pytest.fixture
def store(tmp_path) -> ObjectStore:
    (tmp_path / "objects" / "tmp").mkdir(parents=True)
    return ObjectStore(tmp_path / "objects")


def test_layout_is_sha256_sharded(store) -> None:
    obj = store.put_bytes(b"hello")
    digest = hashlib.sha256(b"hello").hexdigest()
    assert obj.sha256 == digest and obj.size == 5
    path = store.root / "sha256" / digest[:2] / digest[2:]
    assert store.path(digest) == path and path.read_bytes() == b"hello"
    assert len(path.name) == 62


def test_file_and_bytes_give_the_same_object(store, tmp_path) -> None:
    data = os.urandom(3 << 20) + b"tail"
    (tmp_path / "f").write_bytes(data)
    a = store.put_file(tmp_path / "f")
    b = store.put_bytes(data)
    assert a == b and a.sha256 == hashlib.sha256(data).hexdigest()
    assert store.path(a.sha256).read_bytes() == data


def test_objects_are_deduplicated_read_only_and_leave_no_temp(store, tmp_path) -> None:
    (tmp_path / "a").write_bytes(b"same")
    (tmp_path / "b").write_bytes(b"same")
    store.put_file(tmp_path / "a")
    store.put_file(tmp_path / "b")
    files = [p for p in (store.root / "sha256").rglob("*") if p.is_file()]
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o444
    assert list(store.tmp.iterdir()) == []


def test_empty_file(store, tmp_path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    obj = store.put_file(tmp_path / "empty")
    assert obj.size == 0 and store.state(obj.sha256) is ObjectState.ok


def test_state_detects_missing_and_corrupt(store) -> None:
    obj = store.put_bytes(b"payload")
    assert store.state(obj.sha256) is ObjectState.ok
    path = store.path(obj.sha256)
    path.chmod(0o644)
    path.write_bytes(b"paYload")
    assert store.state(obj.sha256) is ObjectState.corrupt
    path.unlink()
    assert store.state(obj.sha256) is ObjectState.missing


def test_a_truncated_object_is_replaced_on_the_next_put(store) -> None:
    obj = store.put_bytes(b"0123456789")
    path = store.path(obj.sha256)
    path.chmod(0o644)
    path.write_bytes(b"01234")
    store.put_bytes(b"0123456789")
    assert store.state(obj.sha256) is ObjectState.ok


def test_a_source_that_changes_while_stored_is_refused(store, tmp_path, monkeypatch) -> None:
    import registry.base.hashing

    src = tmp_path / "log"
    src.write_bytes(b"first line\n")
    real = registry.base.hashing.sha256_file

    def hash_then_append(path, *args):
        digest = real(path, *args)
        with open(path, "ab") as f:
            f.write(b"late line\n")
        return digest

    monkeypatch.setattr(registry.base.hashing, "sha256_file", hash_then_append)
    with pytest.raises(InvalidInput, match="changed while being stored"):
        store.put_file(src)
    assert not any(p.is_file() for p in (store.root / "sha256").rglob("*"))
    assert list(store.tmp.iterdir()) == []


def test_unreadable_source_is_a_clear_error(store, tmp_path) -> None:
    with pytest.raises(InvalidInput, match="cannot read"):
        store.put_file(tmp_path / "absent")
