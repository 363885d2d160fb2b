"""`registry compare`: many real records as one table; typed `--where`, sort, formats,
and tables that fit 80 and 120 columns without folding a value."""

from __future__ import annotations

import csv
import io
import json

import pytest

from registry.errors import ExitCode
from tests import sealed_home

env = sealed_home.env  # the module fixture: a home of real sealed records

COLUMNS = "id,lane,precision.kv_cache,parallel.tensor,decode_tok_s.median,imported"


@pytest.fixture
def compare(cli, env):
    def run(*args: str):
        return cli("compare", *args, "--home", env["home"].root)
    return run


def rows_of(r) -> list[dict]:
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_typed_conditions(compare, env) -> None:
    every = rows_of(compare("--columns", COLUMNS, "--json"))
    assert len(every) == 6
    rates = {r["id"]: r["decode_tok_s.median"] for r in every}
    for op, keep in ((">=", lambda x: x >= 300), ("<", lambda x: x < 300),
                     (">", lambda x: x > 300), ("<=", lambda x: x <= 300)):
        got = rows_of(compare("--columns", COLUMNS, "--where", f"decode_tok_s.median{op}300",
                              "--json"))
        # a record without the figure (every row flagged: no decode rate) matches only !=
        assert {r["id"] for r in got} == {i for i, x in rates.items()
                                          if x is not None and keep(x)}
    one = every[0]["decode_tok_s.median"]
    got = rows_of(compare("--columns", COLUMNS, "--where", f"decode_tok_s.median!={one!r}",
                          "--json"))
    assert len(got) == len([x for x in rates.values() if x != one]) < 6
    tp4 = rows_of(compare("--columns", COLUMNS, "--where", "parallel.tensor>1", "--json"))
    assert [r["id"] for r in tp4] == [env["laguna"]]  # 4 > 1 as numbers
    fp8 = rows_of(compare("--columns", COLUMNS, "--where", "precision.kv_cache!=bfloat16",
                          "--where", "imported=no", "--json"))
    assert env["others"][0] in {r["id"] for r in fp8} and env["laguna"] not in {
        r["id"] for r in fp8}


@pytest.mark.parametrize("term, message", [
    ("decode_tok_s.median>=fast", "is not a number"),
    ("imported<yes", "use = or !="),
    ("decode_tok_s.median~3", "expected FIELD=VALUE"),
    ("no.such.field=1", "unknown column"),
])
def test_bad_conditions_exit_4(compare, term, message) -> None:
    r = compare("--where", term)
    assert r.exit_code == ExitCode.INVALID_INPUT and message in r.stderr
    assert "Traceback" not in r.stderr


def test_sort_and_formats(compare, env) -> None:
    got = rows_of(compare(*env["bf16"], env["laguna"], "--columns", COLUMNS,
                          "--sort", "-decode_tok_s.median", "--json"))
    values = [r.get("decode_tok_s.median") for r in got]
    known = [v for v in values if v is not None]  # records without the value sort last
    assert len(got) == 4 and values == sorted(known, reverse=True) + [None] * (4 - len(known))
    r = compare("--columns", COLUMNS, "--sort", "parallel.tensor", "--format", "csv")
    table = list(csv.DictReader(io.StringIO(r.stdout)))
    assert [row["parallel.tensor"] for row in table] == ["1"] * 5 + ["4"]
    assert {row["imported"] for row in table} == {"true", "false"}
    assert all(len(row["id"]) == 64 for row in table)
    md = compare("--columns", COLUMNS, "--format", "md").stdout.splitlines()
    assert len(md) == 2 + 6 and md[1].startswith("| --- |")
    assert "False" not in r.stdout + "\n".join(md) and "None" not in "\n".join(md)


@pytest.mark.parametrize("width", [80, 120])
def test_table_fits_and_wraps_without_losing_a_character(compare, env, monkeypatch,
                                                         width) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    r = compare("--columns", "id,sealed,lane,recipe,precision.weights,precision.kv_cache,"
                "parallel.tensor,decode_tok_s.median,ttft_ms.p50,imported")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and lines[-1] == "6 records"
    assert all(len(line) <= width for line in lines), [len(x) for x in lines]
    assert "…" not in r.stdout
    rows = [line for line in lines[1:-1] if not line.startswith((" ", "("))]
    assert {line.split()[0] for line in rows} == {
        x[:12] for x in [*env["bf16"], *env["others"], env["laguna"]]}
    lane = "laguna-s21-exact-short-decode"  # an identity value: whole on its line, never cut
    assert any(line.split()[1] == lane for line in rows)
    if width == 80:  # the seal time gives way first, and a line says so
        assert "sealed" not in lines[0].split() and any(x.startswith("(sealed") for x in lines)


def test_list_takes_the_same_typed_conditions(cli, env) -> None:
    def ids(*where: str) -> list[str]:
        r = cli("list", "--json", "--home", env["home"].root,
                *[x for w in where for x in ("--where", w)])
        assert r.exit_code == 0, r.stderr
        return [row["id"] for row in json.loads(r.stdout)]

    assert ids("parallel.tensor>1") == [env["laguna"]]
    assert ids("parallel.tensor>=1", "lane=tiny-bf16-exact") == list(reversed(env["bf16"]))
    slow = ids("decode_tok_s.median<1000")
    assert env["laguna"] in slow and env["others"][1] not in slow  # ngram's bursts: ~86k
    r = cli("list", "--where", "parallel.tensor>two", "--home", env["home"].root)
    assert r.exit_code == ExitCode.INVALID_INPUT and "not a number" in r.stderr


@pytest.mark.parametrize("width", [80, 120])
def test_list_fits_and_cuts_nothing(cli, env, monkeypatch, width) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    lines = cli("list", "--home", env["home"].root).stdout.splitlines()
    assert all(len(line) <= width for line in lines) and "…" not in "\n".join(lines)
    assert {line.split()[0] for line in lines[1:-1] if not line.startswith((" ", "("))} == {
        x[:12] for x in [*env["bf16"], *env["others"], env["laguna"]]}
    assert "None" not in "\n".join(lines) and "False" not in "\n".join(lines)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_records_without_figures_compare_on_the_default_columns(cli, store_home, make_run,
                                                                seal_run_dir) -> None:
    """The headline figure is a column of every record: records that measured nothing
    (no bench rows) still compare on the default columns, the figure empty."""
    run = make_run()
    (run / "bench.json").unlink()
    sealed = seal_run_dir(run)
    r = cli("compare", sealed.id, "--json")
    assert r.exit_code == 0, r.stderr
    [row] = json.loads(r.stdout)
    assert row["id"].startswith(sealed.id[:12]) and row["decode_tok_s.median"] is None
