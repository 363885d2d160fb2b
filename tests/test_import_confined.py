"""Import reads nothing outside the capsule unless the user names it: a capsule holding only
a llama-server log whose model path names a GGUF elsewhere on the importer's disk does not
cite that file as evidence; `--checkpoint` names it, and then it is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.gguf_bytes import gguf

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def _capsule(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "elsewhere" / "model.gguf"
    outside.parent.mkdir()
    outside.write_bytes(gguf())
    capsule = tmp_path / "capsule"
    capsule.mkdir()
    (capsule / "server.log").write_text(
        f"srv    load_model: loading model '{outside}'\n"
        f"llama_model_loader: loaded meta data with 7 key-value pairs and 1 tensors from "
        f"{outside} (version GGUF V3 (latest))\n")
    return capsule, outside


def _identity(cli, *args: object) -> dict:
    r = cli("import", *args, "--json")
    assert r.exit_code == 0, r.stderr
    rid = json.loads(r.stdout)[0]["record"]["id"]
    shown = json.loads(cli("show", rid, "--json").stdout)
    return shown["statement"]["predicate"]["identity"]


def test_a_log_s_model_path_outside_the_capsule_is_not_read(cli, store_home,
                                                            tmp_path: Path) -> None:
    capsule, outside = _capsule(tmp_path)
    identity = _identity(cli, capsule)
    cited = [e["source"] for f in identity["fields"].values() for e in f.get("evidence", [])]
    assert str(outside) not in cited
    assert identity["fields"].get("precision.weights", {}).get("resolved") is None
    assert any(n.startswith(f"checkpoint not read: the log names {outside}")
               for n in identity["notes"]), identity["notes"]


def test_checkpoint_names_the_file_and_it_is_read(cli, store_home, tmp_path: Path) -> None:
    capsule, outside = _capsule(tmp_path)
    identity = _identity(cli, capsule, "--checkpoint", outside)
    weights = identity["fields"]["precision.weights"]
    assert weights["resolved"] == "Q8_0"
    assert weights["evidence"][-1]["source"] == str(outside)


def test_a_malformed_checkpoint_named_is_refused(cli, store_home, tmp_path: Path) -> None:
    """A GGUF the user names is their input: a malformed one exits 4, nothing imported."""
    capsule, outside = _capsule(tmp_path)
    outside.write_bytes(outside.read_bytes()[:40])  # cut inside its first key
    r = cli("import", capsule, "--checkpoint", outside)
    assert r.exit_code == 4 and "Traceback" not in r.stderr, r.stderr
    assert "not a readable GGUF file" in r.stderr
    assert json.loads(cli("list", "--json").stdout) == []
