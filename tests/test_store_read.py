"""The SQLite index read through sqlite3 (registry/store/sqlite_read.py) answers exactly
as the SQLAlchemy `Index` does, with the names of the one SQLModel definition."""

from __future__ import annotations

import subprocess
import sys

import pytest

from registry.errors import InvalidInput, NotFound
from registry.store.index import open_index
from registry.store.sqlite_read import SqliteReader, sqlite_path
from tests.conftest import ROOT, resolved_identity


def reader(home) -> SqliteReader:
    path = sqlite_path(home.database_url)
    assert path is not None
    return SqliteReader(home.database_url, path)


def test_tables_py_is_written_from_the_sqlmodel_tables() -> None:
    done = subprocess.run([sys.executable, ROOT / "tools" / "index_tables.py", "--check"])
    assert done.returncode == 0, "registry/store/tables.py differs: python tools/index_tables.py"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_rows_entries_and_pending_equal_the_sqlalchemy_index(store_home, make_run,
                                                             seal_run_dir) -> None:
    seal_run_dir(make_run("a"), resolved_identity("bfloat16"))
    seal_run_dir(make_run("b"), resolved_identity("fp8_e4m3", tensor=2))
    seal_run_dir(make_run("c"), resolved_identity("bfloat16", tensor=4))
    index, fast = open_index(store_home), reader(store_home)
    for where, limit in [([], None), ([], 2), ([("precision.kv_cache", "bfloat16")], None),
                         ([("parallel.tensor", "2")], None), ([("imported", "false")], 1),
                         ([("lane", "tiny-bf16-exact"), ("precision.kv_cache", "fp8_e4m3")],
                          None), ([("precision.kv_cache", "nvfp4")], None)]:
        assert fast.rows(where, limit) == index.rows(where, limit), (where, limit)
    assert len(fast.rows()) == 3
    ids = [r.id for r in index.rows()]
    assert fast.entries() == index.entries() and fast.entries(ids[:1]) == index.entries(ids[:1])
    assert fast.pending() == index.pending() == []
    with pytest.raises(InvalidInput, match="unknown field"):
        fast.rows([("nonsense", "1")])


def test_a_missing_or_broken_index_is_one_clear_error(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'index.sqlite'}"
    with pytest.raises(NotFound, match="unable to open"):
        SqliteReader(url, tmp_path / "index.sqlite").rows()
    assert not (tmp_path / "index.sqlite").exists()  # nothing created by a reader
    (tmp_path / "index.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(NotFound, match=r"registry reindex|not a database") as e:
        SqliteReader(url, tmp_path / "index.sqlite").entries()
    assert e.value.hint and "reindex" in e.value.hint


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_index_lacking_a_column_is_refused_not_read(store_home, make_run,
                                                       seal_run_dir) -> None:
    import sqlite3

    seal_run_dir(make_run())
    db = sqlite3.connect(store_home.root / "index.sqlite")
    db.execute("ALTER TABLE records DROP COLUMN quality")
    db.commit()
    db.close()
    with pytest.raises(NotFound, match="quality"):
        reader(store_home).rows()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_asking_for_pending_rows_scans_no_table(store_home, make_run, seal_run_dir) -> None:
    """Every reader first asks for the rows a crashed seal left: a partial index answers,
    in a new index and in one `reindex` rebuilt, and it still finds a pending row."""
    import sqlite3

    from registry.store.reindex import reindex

    seal_run_dir(make_run("a"))
    path = sqlite_path(store_home.database_url)
    assert path is not None
    for _ in ("created", "rebuilt"):
        with sqlite3.connect(path) as db:
            plan = db.execute("EXPLAIN QUERY PLAN SELECT id FROM records "
                              "WHERE ledger_commit IS NULL").fetchall()
        assert "USING INDEX ix_records_pending" in str(plan), plan
        reindex(store_home)
    with sqlite3.connect(path) as db:
        rid = db.execute("SELECT id FROM records").fetchone()[0]
        db.execute("UPDATE records SET ledger_commit = NULL")
    assert reader(store_home).pending() == [rid]
