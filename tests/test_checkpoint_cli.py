"""`registry inspect` through the CLI: JSON output, identity documents, and bad input
as one clear message with exit code 4 and no traceback."""

from __future__ import annotations

import json
import struct
import tomllib
from pathlib import Path

import pytest

from tests.checkpoints import T, build, fp8_config, kv_scales, safetensors_bytes, weights

pytestmark = pytest.mark.usefixtures("hash_cache")


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return build(tmp_path / "tiny-kv-fp8", fp8_config(), weights() | kv_scales([0, 1, 2, 3]))


def test_inspect_json(cli, checkpoint: Path) -> None:
    r = cli("inspect", checkpoint, "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["checkpoint"]["kv_scales"]["verdict"] == "calibrated"
    assert out["checkpoint"]["quantization"]["weights"] == "int4-w4a16"
    assert "manifest" not in out  # hashing is asked for, not implied


def test_inspect_manifest_json(cli, checkpoint: Path) -> None:
    from registry.checkpoint.manifest import build_manifest

    out = json.loads(cli("inspect", checkpoint, "--manifest", "--json").stdout)
    assert out["manifest"]["digest"] == build_manifest(checkpoint).digest
    assert len(out["manifest"]["files"]) == 5


def test_inspect_human_output(cli, checkpoint: Path) -> None:
    r = cli("inspect", checkpoint)
    assert r.exit_code == 0
    assert "calibrated" in r.stdout and "model.layers.3.self_attn.v_scale" in r.stdout


def test_write_identity_into_the_nearest_identities_folder(cli, checkpoint: Path,
                                                           tmp_path: Path, monkeypatch) -> None:
    from registry.checkpoint.manifest import build_manifest

    repo = tmp_path / "recipes-repo"
    (repo / "identities").mkdir(parents=True)
    (repo / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(repo / "deep" / "er")
    r = cli("inspect", checkpoint, "--write-identity", "tiny-kv-fp8")
    assert r.exit_code == 0, r.stderr
    folder = repo / "identities" / "checkpoints"
    doc = tomllib.loads((folder / "tiny-kv-fp8.toml").read_text())
    assert (doc["schema"], doc["kind"], doc["name"]) == ("registry.identity/v1", "checkpoint",
                                                         "tiny-kv-fp8")
    assert doc["fields"] == {"manifest_sha256": build_manifest(checkpoint).digest}
    assert doc["facts"]["kv_scales"] == {"count": 8, "source": "calibrated"}
    assert doc["facts"]["kv_cache_scheme"]["strategy"] == "tensor"
    assert doc["facts"]["attention"]["num_key_value_heads"] == 2
    copied = folder / doc["facts"]["config"]
    assert copied.read_bytes() == (checkpoint / "config.json").read_bytes()


def test_an_identity_is_not_overwritten_without_force(cli, checkpoint: Path,
                                                      tmp_path: Path) -> None:
    ids = tmp_path / "ids"
    assert cli("inspect", checkpoint, "--write-identity", "x", "--identities", ids).exit_code == 0
    target = ids / "checkpoints" / "x.toml"
    target.write_text("# edited by hand\n")
    r = cli("inspect", checkpoint, "--write-identity", "x", "--identities", ids)
    assert r.exit_code == 6 and "already exists" in r.stderr and "--force" in r.stderr
    assert target.read_text() == "# edited by hand\n"
    r = cli("inspect", checkpoint, "--write-identity", "x", "--identities", ids, "--force")
    assert r.exit_code == 0 and "manifest_sha256" in target.read_text()


def test_the_written_identity_is_usable_by_a_recipe(cli, checkpoint: Path,
                                                    tmp_path: Path) -> None:
    from registry.recipe import load_recipe
    from tests.recipe_factory import MINIMAL

    ids = tmp_path / "identities"
    cli("inspect", checkpoint, "--write-identity", "tiny", "--identities", ids)
    recipe = tmp_path / "r.toml"
    recipe.write_text(MINIMAL.replace('path = "/models/tiny"',
                                      'path = "/models/tiny"\nidentity = "checkpoints/tiny"'))
    doc = tomllib.loads((ids / "checkpoints" / "tiny.toml").read_text())
    assert load_recipe(recipe).model.manifest_sha256 == doc["fields"]["manifest_sha256"]


def test_hub_snapshot_paths_give_hub_id_and_revision(cli, tmp_path: Path) -> None:
    rev = "4bbfc285f2f8b3b6b526274c133b7b17aae6c8cb"
    snap = build(tmp_path / "hub" / "models--poolside--Laguna-S-2.1-INT4" / "snapshots" / rev,
                 fp8_config(), weights())
    cli("inspect", snap, "--write-identity", "l", "--identities", tmp_path / "ids")
    doc = tomllib.loads((tmp_path / "ids" / "checkpoints" / "l.toml").read_text())
    assert doc["fields"]["hub_id"] == "poolside/Laguna-S-2.1-INT4"
    assert doc["fields"]["revision"] == rev


def test_write_identity_without_an_identities_folder(cli, checkpoint: Path, tmp_path: Path,
                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = cli("inspect", checkpoint, "--write-identity", "x")
    assert r.exit_code == 5 and "no identities/ folder" in r.stderr


def _corrupt(root: Path, data: bytes) -> Path:
    (root / "model.safetensors").write_bytes(data)
    return root / "model.safetensors"


BAD = {
    "missing config.json": (lambda root: (root / "config.json").unlink(),
                            "no config.json in this directory"),
    "non-JSON config": (lambda root: (root / "config.json").write_text("{'not': json}"),
                        "config.json: config is not valid JSON"),
    "config not an object": (lambda root: (root / "config.json").write_text("[1, 2]"),
                             "config is not a JSON object"),
    "truncated header": (lambda root: _corrupt(root, b"\x10\x00\x00"),
                         "model.safetensors: truncated safetensors header"),
    "header length beyond the file": (
        lambda root: _corrupt(root, struct.pack("<Q", 4096) + b'{"a": 1}'),
        "model.safetensors: safetensors header length 4096 is beyond the end of the file"),
    "huge header length": (lambda root: _corrupt(root, struct.pack("<Q", 2**40)),
                           "exceeds the 100000000 byte limit"),
    "non-JSON header": (lambda root: _corrupt(root, struct.pack("<Q", 4) + b"{{{{"),
                        "safetensors header is not JSON"),
    "tensor data beyond the file": (
        lambda root: _corrupt(root, safetensors_bytes({"w": T("F32", [4])})[:-8]),
        "tensor 'w' lies beyond the end of the file"),
    "malformed tensor entry": (
        lambda root: _corrupt(root, struct.pack("<Q", 16) + b'{"w": {"x": 1}} '),
        "tensor 'w': malformed header entry"),
    "non-JSON index": (
        lambda root: (root / "model.safetensors.index.json").write_text("weight_map"),
        "safetensors index is not valid JSON"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_clear_message_with_exit_code_4(cli, checkpoint: Path,
                                                         case: str) -> None:
    breaks, message = BAD[case]
    breaks(checkpoint)
    for command in ("inspect", "kv"):
        r = cli(command, checkpoint, "--json")
        assert r.exit_code == 4, (case, r.stdout, r.stderr)
        assert message in r.stderr, r.stderr
        assert str(checkpoint) in r.stderr  # names the file
        assert "Traceback" not in r.stderr and r.stdout == ""


def test_a_path_that_does_not_exist(cli, tmp_path: Path) -> None:
    r = cli("inspect", tmp_path / "nope")
    assert r.exit_code == 4 and "no such file or directory" in r.stderr and "hint:" in r.stderr


def test_a_bad_identity_name_writes_nothing(cli, checkpoint: Path, tmp_path: Path) -> None:
    r = cli("inspect", checkpoint, "--write-identity", "../escape", "--identities",
            tmp_path / "ids")
    assert r.exit_code == 4 and "identity name" in r.stderr
    assert not (tmp_path / "ids").exists()
