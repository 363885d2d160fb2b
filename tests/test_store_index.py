"""Sealed records in the ledger and the index (SQLite and PostgreSQL): list with
--where, show by id prefix, reindex from the ledger alone."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import git
import pytest
from sqlalchemy import text

from registry.errors import ExitCode
from registry.store.index import open_index
from tests.conftest import resolved_identity


def test_seal_commits_one_record_per_commit(store_home, make_run, seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    repo = git.Repo(store_home.ledger)
    head = repo.head.commit
    assert head.hexsha == sealed.ledger_commit
    assert head.message.splitlines()[0] == sealed.id
    assert sealed.summary in head.message and "kv=bfloat16" in sealed.summary
    shard = f"records/{sealed.id[:2]}/{sealed.id}"  # its shard: docs/formats.md
    assert sorted(head.stats.files) == [f"{shard}/envelope.json", f"{shard}/statement.json"]
    run_files = [p for p in (store_home.root.parent.parent / "run").rglob("*") if p.is_file()]
    assert sealed.artifacts == len(run_files) == 5
    assert not repo.is_dirty(untracked_files=True)


def test_results_are_re_derived_from_raw_rows(cli, make_run, seal_run_dir) -> None:
    steps = (0.01, 0.02, 0.005, 0.0125)
    sealed = seal_run_dir(make_run(steps=steps))
    shown = json.loads(cli("show", sealed.id[:12], "--json").stdout)
    [suite] = shown["statement"]["predicate"]["results"]
    metrics = suite["metrics"]
    rates = [99 / (99 * step) for step in steps]  # t[99] - t[0] = 99 * step
    assert metrics["decode_tok_s.median"]["value"] == pytest.approx(statistics.median(rates))
    assert metrics["decode_tok_s.median"]["formula"] == (
        "median over unflagged rows of 99 / (t[99] - t[0])")
    legacy = metrics["decode_tok_s_other_formula.median"]
    assert legacy["value"] == pytest.approx(statistics.median(rates) * 100 / 99)
    assert legacy["count"] == len(steps) and suite["rows"] == len(steps)


def test_list_where_identity_fields_and_columns(cli, make_run, seal_run_dir, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    bf16 = seal_run_dir(make_run("a"), resolved_identity("bfloat16"))
    fp8 = seal_run_dir(make_run("b"), resolved_identity("fp8_e4m3", tensor=2))
    ids = lambda *args: [r["id"] for r in json.loads(cli("list", "--json", *args).stdout)]  # noqa: E731
    assert set(ids()) == {bf16.id, fp8.id}
    assert ids("--where", "precision.kv_cache=fp8_e4m3") == [fp8.id]
    assert ids("--where", "parallel.tensor=2") == [fp8.id]
    both = ("--where", "lane=tiny-bf16-exact", "--where", "precision.kv_cache=bfloat16")
    assert ids(*both) == [bf16.id]
    assert ids("--where", "precision.kv_cache=nvfp4") == []
    assert ids("--where", "imported=false", "--limit", "1") == [fp8.id]  # newest first
    table = cli("list").stdout
    assert bf16.id[:12] in table and "fp8_e4m3" in table  # as recorded: one spelling


def test_list_where_errors(cli, make_run, seal_run_dir) -> None:
    seal_run_dir(make_run())
    r = cli("list", "--where", "kv_cache")
    assert r.exit_code == ExitCode.INVALID_INPUT and "expected FIELD=VALUE" in r.stderr
    r = cli("list", "--where", "colour=red")
    assert r.exit_code == ExitCode.INVALID_INPUT and "unknown field" in r.stderr
    assert cli("list", "--limit", "-1").exit_code == ExitCode.USAGE


def test_show_accepts_unambiguous_prefixes_only(cli, make_run, seal_run_dir, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    sealed = [seal_run_dir(make_run(f"r{i}")) for i in range(17)]
    first = sealed[0].id
    shown = json.loads(cli("show", first[:10], "--json").stdout)
    assert shown["id"] == first and shown["check"]["trust"] == "verified"
    fields = shown["statement"]["predicate"]["identity"]["fields"]
    assert fields["precision.kv_cache"]["resolved"] == "bfloat16"
    # 17 ids over 16 leading hex digits: at least two share one; under 4 digits is too short
    lead = next(c for c in "0123456789abcdef" if sum(s.id.startswith(c) for s in sealed) > 1)
    r = cli("show", lead)
    assert r.exit_code == ExitCode.NOT_FOUND and "too short" in r.stderr
    r = cli("show", "0" * 64)
    assert r.exit_code == ExitCode.NOT_FOUND and "no record" in r.stderr
    assert cli("show", "xyz").exit_code == ExitCode.NOT_FOUND
    human = cli("show", first[:12]).stdout
    assert first in human and "precision.kv_cache" in human and "99 / (t[99] - t[0])" in human


def test_reindex_rebuilds_the_index_from_the_ledger(cli, store_home, make_run,
                                                    seal_run_dir) -> None:
    for name, kv in (("a", "bfloat16"), ("b", "fp8_e4m3"), ("c", "bfloat16")):
        seal_run_dir(make_run(name), resolved_identity(kv))
    before = cli("list", "--json").stdout
    index = open_index(store_home)
    with index.engine.begin() as db:
        for table in ("identity", "results", "records"):
            db.execute(text(f"DELETE FROM {table}"))
    assert json.loads(cli("list", "--json").stdout) == []
    r = cli("reindex")
    assert r.exit_code == 0 and "indexed 3 records" in r.stdout
    assert cli("list", "--json").stdout == before
    fp8 = cli("list", "--json", "--where", "precision.kv_cache=fp8_e4m3").stdout
    assert len(json.loads(fp8)) == 1
    assert cli("verify", "--all").exit_code == 0


def test_reindex_into_an_empty_database(cli, store_home, make_run, seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    from registry.store.index import metadata

    metadata.drop_all(open_index(store_home).engine)
    assert cli("list").exit_code == ExitCode.NOT_FOUND  # no tables: a clear error
    assert cli("reindex").exit_code == 0
    assert [r["id"] for r in json.loads(cli("list", "--json").stdout)] == [sealed.id]


def test_read_commands_stay_light(store_home, make_run, seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    code = (
        "import sys\n"
        "from registry.cli import app\n"
        f"for args in (['list', '--json'], ['show', '{sealed.id[:12]}', '--json']):\n"
        "    try:\n        app(args)\n"
        "    except SystemExit as e:\n        assert not e.code, e.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm', 'git'))\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout


def test_reindex_replaces_the_tables_of_an_older_registry(cli, store_home, make_run,
                                                          seal_run_dir, database_url) -> None:
    """The index is a cache: a table with other columns (an older registry's) is not
    migrated but dropped and rebuilt by `reindex`."""
    import sqlite3

    if database_url is not None:
        pytest.skip("the older table is made with sqlite3")
    sealed = seal_run_dir(make_run())
    db = sqlite3.connect(store_home.root / "index.sqlite")
    db.execute("ALTER TABLE records DROP COLUMN quality")
    db.commit()
    db.close()
    r = cli("list")
    assert r.exit_code == ExitCode.NOT_FOUND and "registry reindex" in r.stderr
    assert cli("reindex").exit_code == 0
    assert [row["id"] for row in json.loads(cli("list", "--json").stdout)] == [sealed.id]
