"""The checkpoint's content as an identity field: `model.manifest_sha256` resolved from
the release files on disk, compared with the recipe's declared digest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from registry.checkpoint.manifest import build_manifest
from registry.formats.identity import Status
from registry.recipe import load_recipe
from registry.resolve import resolve_run
from tests.checkpoints import build, llama_config, weights
from tests.conftest import ROOT

CAPTURED = ROOT / "tests/data/cpu-runs/tiny-bf16-kv"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The captured run, its log naming a checkpoint folder that does not exist here."""
    run = shutil.copytree(CAPTURED, tmp_path / "run")
    log = run / "server.log"
    log.write_text(log.read_text().replace("/tmp/registry-models/", f"{tmp_path}/absent/"))
    return run


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    return build(tmp_path / "tiny-llama", llama_config(), weights())


def test_the_manifest_digest_is_resolved_from_the_files(run_dir, checkpoint, hash_cache) -> None:
    field = resolve_run(run_dir, checkpoint=checkpoint).fields["model.manifest_sha256"]
    manifest = build_manifest(checkpoint)
    assert field.resolved == manifest.digest and field.status is Status.undeclared
    [evidence] = field.evidence
    assert evidence.source == str(checkpoint)
    assert evidence.text.startswith(f"{len(manifest.files)} release files, ")
    assert evidence.text.endswith(f"manifest sha256:{manifest.digest}")


def test_a_declared_digest_is_confirmed_or_contradicted(run_dir, checkpoint, hash_cache) -> None:
    recipe = load_recipe(ROOT / "recipes/tiny-bf16-kv.toml")
    digest = build_manifest(checkpoint).digest
    confirmed = recipe.model_copy(update={"model": recipe.model.model_copy(
        update={"manifest_sha256": digest})})
    field = resolve_run(run_dir, recipe=confirmed, checkpoint=checkpoint).fields[
        "model.manifest_sha256"]
    assert field.status is Status.confirmed
    (checkpoint / "generation_config.json").write_text('{"eos_token_id": 3}')  # one file edited
    field = resolve_run(run_dir, recipe=confirmed, checkpoint=checkpoint).fields[
        "model.manifest_sha256"]
    assert field.status is Status.mismatch and field.declared == digest != field.resolved


def test_no_checkpoint_on_disk_is_unresolved(run_dir) -> None:
    field = resolve_run(run_dir).fields["model.manifest_sha256"]
    assert field.resolved is None and field.status is Status.unresolved
    assert field.rule == "checkpoint not on disk: its files were not hashed"
    assert "draft.manifest_sha256" not in resolve_run(run_dir).fields  # no draft in this run


def test_a_bare_config_file_is_not_a_manifest(run_dir, checkpoint) -> None:
    field = resolve_run(run_dir, checkpoint=checkpoint / "config.json").fields[
        "model.manifest_sha256"]
    assert field.resolved is None and "bare config file" in field.rule
