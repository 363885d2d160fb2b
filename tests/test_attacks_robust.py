"""Attacks on what the registry reads, done as an outsider would: plain file edits,
plain `git`, `chmod`, `touch`; never the project's own API. Each ends in a refusal
with one message and a documented exit code, never a traceback or a record that
claims more than its evidence proves.

Covers issue 14's points 5 (evidence that proves nothing), 6 (no traceback), 7 (a
killed writer's debris, private key permissions) and the markup part of point 4."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

import git
import pytest

from registry.errors import ExitCode
from registry.store.ledger import folder_at
from tests.conftest import ROOT

CPU_RUNS = ROOT / "tests" / "data" / "cpu-runs"
TINY = CPU_RUNS / "tiny-bf16-kv"  # a real vLLM CPU run
DOCUMENTED = {0, 1, 2, 3, 4, 5, 6, 7}


def assert_clean(r, code: int) -> None:
    """The exit code expected, one error message, no traceback."""
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout
    if code:
        assert r.stderr.count("error:") == 1, r.stderr


def listed(cli) -> list[dict]:
    r = cli("list", "--json", "--limit", "0")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def copy_run(tmp_path: Path, source: Path = TINY, name: str = "run") -> Path:
    run = tmp_path / name
    shutil.copytree(source, run)
    return run


# ---- point 5: evidence that proves nothing is not sealed as proof ----

def test_a_random_bytes_log_is_refused_and_kept_only_marked(cli, store_home, make_run) -> None:
    run = make_run()
    (run / "server.log").write_bytes(os.urandom(20_000))
    r = cli("seal", run)
    assert_clean(r, ExitCode.REFUSED)
    assert "proves nothing" in r.stderr and "--allow-unproven" in r.stderr
    assert listed(cli) == []

    r = cli("seal", run, "--allow-unproven", "kept to show the broken logger")
    assert_clean(r, 0)
    record = r.stdout.split()[0]
    assert "UNPROVEN" in r.stdout
    shown = cli("show", record)
    assert "UNPROVEN (sealed anyway: kept to show the broken logger)" in shown.stdout
    assert "no engine start" in shown.stdout
    statement = json.loads(cli("show", record, "--json").stdout)["statement"]
    assert statement["predicate"]["unproven"]["reason"] == "kept to show the broken logger"
    [row] = listed(cli)
    assert row["summary"].startswith("UNPROVEN ")
    assert f"{record[:12]}!" in cli("list").stdout
    diff = cli("diff", record, record)
    assert diff.stdout.count("UNPROVEN") == 2  # both sides marked
    assert set(json.loads(cli("diff", record, record, "--json").stdout)["unproven"]) == {"a", "b"}


def test_allow_unproven_needs_a_reason_and_an_unproven_run(cli, store_home, make_run,
                                                           tmp_path) -> None:
    garbage = make_run()
    assert_clean(cli("seal", garbage, "--allow-unproven", "  "), ExitCode.INVALID_INPUT)
    real = copy_run(tmp_path, name="real")
    r = cli("seal", real, "--allow-unproven", "just in case")
    assert_clean(r, ExitCode.INVALID_INPUT)
    assert "proves its identity" in r.stderr
    assert listed(cli) == []


def test_a_real_run_seals_unmarked(cli, store_home, tmp_path) -> None:
    r = cli("seal", copy_run(tmp_path))
    assert_clean(r, 0)
    assert "UNPROVEN" not in r.stdout + cli("show", r.stdout.split()[0]).stdout


def test_a_failed_run_with_its_status_deleted_is_refused(cli, store_home, tmp_path) -> None:
    run = copy_run(tmp_path, CPU_RUNS / "crashed-startup")
    (run / "status.json").unlink()
    r = cli("seal", run, "--allow-unproven", "try anyway")
    assert_clean(r, ExitCode.REFUSED)
    assert "the run failed" in r.stderr and "Engine core initialization failed" in r.stderr
    assert listed(cli) == []


@pytest.mark.parametrize("status", ["complete", None])
def test_failed_requests_are_read_from_the_rows(cli, store_home, tmp_path, status) -> None:
    run = copy_run(tmp_path)
    bench = json.loads((run / "bench.json").read_text())
    bench["rows"][1]["error"] = "HTTP 500: EngineDeadError"
    (run / "bench.json").write_text(json.dumps(bench))
    if status is None:
        (run / "status.json").unlink()
    r = cli("seal", run)
    assert_clean(r, ExitCode.REFUSED)
    assert "1 of" in r.stderr and "EngineDeadError" in r.stderr


def test_rows_without_one_completed_request_are_refused(cli, store_home, tmp_path) -> None:
    run = copy_run(tmp_path)
    bench = json.loads((run / "bench.json").read_text())
    for row in bench["rows"]:
        row.update(token_ids=[], token_times_s=[], completion_tokens=0)
    (run / "bench.json").write_text(json.dumps(bench))
    (run / "status.json").unlink()
    r = cli("seal", run)
    assert_clean(r, ExitCode.REFUSED)
    assert "no completed request" in r.stderr


# ---- point 6: no traceback, ever ----

DEEP = ("[" * 5000 + "]" * 5000).encode()


@pytest.mark.parametrize("name, data", [
    ("bench.json", DEEP),
    ("bench.json", b'{"schema": "registry.bench/v1", "api": "x", "model": "m", "params": {},'
                   b' "suites": [], "rows": [{"suite": "s", "index": 1' + b"7" * 400 + b"}]}"),
    ("bench.json", b'{"api": NaN}'),
    ("status.json", b'{"state": "complete", "ready_s": Infinity}'),
    ("recipe.json", DEEP),
    ("launch.json", b'{"port": 1e999}'),
    ("environment.json", b"\xff\xfe junk"),
    ("status.json", b"[]"),
])
def test_hostile_run_files(cli, store_home, tmp_path, name, data) -> None:
    run = copy_run(tmp_path)
    (run / name).write_bytes(data)
    r = cli("seal", run)
    assert_clean(r, ExitCode.INVALID_INPUT)
    assert name in r.stderr
    assert listed(cli) == []


@pytest.mark.parametrize("line", ["gpu_memory_utilization = nan", "max_num_seqs = inf",
                                  "max_model_len = " + "9" * 400,
                                  "x = " + "[" * 5000 + "]" * 5000])
def test_hostile_recipe_numbers(cli, tmp_path, line) -> None:
    text = (ROOT / "recipes" / "tiny-bf16-kv.toml").read_text()
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(text.replace("[engine.args]", f"[engine.args]\n{line}", 1))
    assert "[engine.args]" in text
    assert_clean(cli("recipe", "validate", recipe), ExitCode.INVALID_INPUT)


def test_a_non_utf8_file_name_in_a_run(cli, store_home, tmp_path) -> None:
    run = copy_run(tmp_path)
    (run / os.fsdecode(b"notes-\xff.txt")).write_text("x")
    r = cli("seal", run)
    assert_clean(r, ExitCode.INVALID_INPUT)
    assert "not UTF-8" in r.stderr
    assert listed(cli) == []


def test_a_deep_nested_checkpoint_config(cli, tmp_path) -> None:
    (tmp_path / "config.json").write_bytes(DEEP)
    assert_clean(cli("inspect", tmp_path), ExitCode.INVALID_INPUT)


def test_a_safetensors_header_with_a_huge_integer(cli, tmp_path) -> None:
    shutil.copy(ROOT / "identities" / "checkpoints" / "laguna-s-2.1-int4.config.json",
                tmp_path / "config.json")
    header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 1' + b"0" * 400 + b"]}}"
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    assert_clean(cli("inspect", tmp_path), ExitCode.INVALID_INPUT)


@pytest.mark.parametrize("content", [DEEP, b"\x00\xff" * 50, b'{"payload": NaN}'])
def test_a_corrupt_ledger_statement_and_envelope(cli, store_home, tmp_path, content) -> None:
    record = cli("seal", copy_run(tmp_path)).stdout.split()[0]
    folder = folder_at(store_home.ledger, record)
    for name in ("statement.json", "envelope.json"):
        (folder / name).write_bytes(content)
    repo = git.Repo(store_home.ledger)
    repo.git.add("-A")
    repo.git.commit("-qm", "corrupt")
    r = cli("verify", "--all")
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr
    for args in (("show", record), ("diff", record, record), ("reindex",), ("list",)):
        r = cli(*args)
        assert r.exit_code in DOCUMENTED and "Traceback" not in r.stderr, args


def test_a_corrupt_object(cli, store_home, tmp_path) -> None:
    record = cli("seal", copy_run(tmp_path)).stdout.split()[0]
    for path in (store_home.objects / "sha256").rglob("*"):
        if path.is_file():
            path.chmod(0o644)
            path.write_bytes(DEEP)
    r = cli("verify", record)
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr
    assert_clean(cli("diff", record, record), ExitCode.FAILED)


# ---- markup: text from records, logs and paths is never markup ----

def test_markup_in_a_key_id(cli, store_home, tmp_path) -> None:
    record = cli("seal", copy_run(tmp_path)).stdout.split()[0]
    envelope = folder_at(store_home.ledger, record) / "envelope.json"
    data = json.loads(envelope.read_bytes())
    data["signatures"][0]["keyid"] = "[/red]"
    data["signatures"][0]["sig"] = "A" * 86 + "=="  # a signature no key made: the claim is shown
    envelope.write_bytes(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())
    repo = git.Repo(store_home.ledger)
    repo.git.commit("-qam", "re-sign")
    r = cli("verify", "--all")
    assert r.exit_code in (ExitCode.FAILED, ExitCode.UNVERIFIABLE), r.stderr
    assert "Traceback" not in r.stderr and "[/red]" in r.stdout
    r = cli("show", record)
    assert r.exit_code in DOCUMENTED and "Traceback" not in r.stderr


def test_markup_in_paths(cli, store_home, tmp_path) -> None:
    r = cli("seal", tmp_path / "gone[/red]")
    assert_clean(r, ExitCode.INVALID_INPUT)
    assert "gone[/red]" in r.stderr
    run = copy_run(tmp_path, name="run[/red][bold]")
    r = cli("diff", run, run)
    assert_clean(r, 0)
    assert "run[/red][bold]" in r.stdout
    r = cli("resolve", run)
    assert_clean(r, 0)


def test_markup_in_a_log_line(cli, tmp_path) -> None:
    run = copy_run(tmp_path)
    with open(run / "server.log", "a") as log:
        log.write("ERROR 11-30 05:54:11 [x.py:1] boom [/red] [bold]\n")
    r = cli("resolve", run)
    assert_clean(r, 0)
    assert "boom [/red] [bold]" in r.stdout


# ---- point 7: a killed writer's debris; private keys others can read ----

def test_debris_of_a_killed_writer_is_cleared_by_the_next(cli, store_home, tmp_path) -> None:
    tmp = store_home.objects / "tmp"
    old = time.time() - 3600
    debris = tmp / "tmpkilled1"
    debris.write_bytes(b"half an object")
    os.utime(debris, (old, old))
    live = tmp / "tmplive0001"
    live.write_bytes(b"a writer still at work")
    os.utime(live, (old, old))
    fresh = tmp / "tmpfresh001"
    fresh.write_bytes(b"just created")
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a live writer holds its temp file
        assert_clean(cli("seal", copy_run(tmp_path)), 0)
    assert not debris.exists()
    assert live.exists() and fresh.exists()


def test_debris_next_to_an_atomically_written_file(tmp_path) -> None:
    from registry.base.files import write_bytes

    target = tmp_path / "status.json"
    debris = tmp_path / ".status.json.k1ll3d"
    debris.write_text("{")
    old = time.time() - 3600
    os.utime(debris, (old, old))
    other = tmp_path / ".other.json.k1ll3d"
    other.write_text("{")
    os.utime(other, (old, old))
    write_bytes(target, b"{}")
    assert target.read_bytes() == b"{}" and not debris.exists() and other.exists()


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_private_key_others_can_read_is_refused(cli, store_home, signing_keys, tmp_path,
                                                  mode) -> None:
    [pem] = signing_keys.glob("*.pem")
    pem.chmod(mode)
    r = cli("seal", copy_run(tmp_path))
    assert_clean(r, ExitCode.REFUSED)
    assert "accessible by others" in r.stderr and "chmod 600" in r.stderr
    assert listed(cli) == []
    pem.chmod(0o600)
    assert_clean(cli("seal", copy_run(tmp_path, name="again")), 0)


@pytest.mark.parametrize("junk", [b"", b"\xff" * 64, b"-----BEGIN PRIVATE KEY-----\nAAAA\n"])
def test_junk_key_files(cli, store_home, signing_keys, tmp_path, junk) -> None:
    [pem] = signing_keys.glob("*.pem")
    pem.write_bytes(junk)
    assert_clean(cli("seal", copy_run(tmp_path)), ExitCode.INVALID_INPUT)
    assert_clean(cli("keys", "list"), ExitCode.INVALID_INPUT)
    (signing_keys / "default").write_bytes(b"../../../etc/passwd\xff")
    assert_clean(cli("seal", copy_run(tmp_path, name="again")), ExitCode.REFUSED)
