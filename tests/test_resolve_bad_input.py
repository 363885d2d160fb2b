"""Bad input to the resolver and `registry resolve`: one clear message or a result with
notes, a documented exit code, never a traceback."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from registry.errors import InvalidInput
from registry.formats.identity import Status
from registry.resolve import resolve_run
from tests.conftest import FIXTURES, ROOT

RUN = FIXTURES / "laguna-b70-record/evidence/record-run"
RECIPE = ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml"


def run_with_log(tmp_path: Path, data: bytes) -> Path:
    (tmp_path / "server.log").write_bytes(data)
    return tmp_path


def test_missing_run_dir_and_missing_log(tmp_path: Path, cli) -> None:
    with pytest.raises(InvalidInput, match="no such run directory"):
        resolve_run(tmp_path / "nope")
    with pytest.raises(InvalidInput, match=r"no server\.log"):
        resolve_run(tmp_path)
    result = cli("resolve", tmp_path)
    assert result.exit_code == 4 and "no server.log" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_empty_log_resolves_nothing_and_says_so(tmp_path: Path) -> None:
    r = resolve_run(run_with_log(tmp_path, b""), recipe_path=RECIPE)
    assert "server.log is empty" in r.notes
    assert r.fields["precision.kv_cache"].status is Status.unresolved
    assert all(f.resolved is None for name, f in r.fields.items() if name != "spec.method")
    assert [e.passed for e in r.expect] == [False, False]


def test_binary_garbage(tmp_path: Path, cli) -> None:
    run = run_with_log(tmp_path, random.Random(7).randbytes(1 << 20))
    r = resolve_run(run)
    assert any("holds no line a vLLM server prints" in note for note in r.notes)
    assert {f.status for f in r.fields.values()} == {Status.unresolved}
    result = cli("resolve", run, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["fields"]


def test_crashed_engine_log_resolves_what_is_there(tmp_path: Path) -> None:
    """The record's log up to the engine config line, then the engine dies."""
    head = (RUN / "server.log").read_text().split("\n")[:37]
    crash = [
        "(EngineCore pid=162906) ERROR 07-26 17:46:02 [core.py:1008] EngineCore failed to start.",
        "(EngineCore pid=162906) ERROR 07-26 17:46:02 [core.py:1008] Traceback (most recent "
        "call last):",
        '(EngineCore pid=162906) ERROR 07-26 17:46:02 [core.py:1008]   File "/v/core.py", '
        "line 999, in run_engine_core",
        "(Worker pid=162987) INFO 07-26 17:46:02 [parallel_state.py:1649] world_size=4 rank=0",
        "(EngineCore pid=162906) ERROR 07-26 17:46:02 [core.py:1008] RuntimeError: Unsupported "
        "data type of kv cache: bfloat16",
        "Traceback (most recent call last):",
        '  File "/v/api_server.py", line 77, in <module>',
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {}",
    ]
    r = resolve_run(run_with_log(tmp_path, "\n".join(head + crash).encode()),
                    recipe_path=RECIPE)
    assert r.value("precision.kv_cache") == "bfloat16" and r.value("parallel.tensor") == 4
    assert r.value("kv.capacity_tokens") is None
    texts = [e.text for e in r.errors]
    assert "EngineCore failed to start." in texts
    assert "RuntimeError: Unsupported data type of kv cache: bfloat16" in texts
    assert texts[-1].startswith("RuntimeError: Engine core initialization failed")
    assert r.notes[-1].startswith("the engine raised: RuntimeError: Engine core")
    assert any("cut off" in note for note in r.notes)  # no final newline


def test_a_broken_checkpoint_named_by_the_user_is_their_error(tmp_path: Path) -> None:
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    with pytest.raises(InvalidInput, match=r"config\.json"):
        resolve_run(RUN, checkpoint=broken)


def test_a_2gb_log_streams_in_constant_memory(tmp_path: Path) -> None:
    """A sparse 2 GiB file (zero bytes, one real line at the end) resolves without holding
    it: the parser never keeps more than one chunk plus one capped line."""
    path = tmp_path / "server.log"
    with open(path, "wb") as f:
        f.truncate(2 << 30)
        f.seek(0, 2)
        f.write(b"\n(EngineCore pid=1) INFO 07-26 17:47:13 [x.py:1] Resolved architecture: Tail\n")
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
    probe = ("import re, sys\nfrom pathlib import Path\nfrom registry.resolve import resolve_run\n"
             "r = resolve_run(sys.argv[1])\n"
             "status = Path('/proc/self/status').read_text()\n"
             "print(r.value('model.architecture'), re.search(r'VmHWM:\\s+(\\d+)', status)[1])")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out[0] == "Tail"
    assert int(out[1]) < 512 * 1024  # KiB: a quarter of the log, whatever the interpreter
