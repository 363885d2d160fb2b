"""The lab's own files checked the way the lab's validators check them (its
tools/validate-recipe-publication.py v2 and tools/validate-repro-guides.py): the real
published manifest passes every rule that can be judged from the file, the real draft
fails for exactly the reasons the lab's code gives, a real package passes and gets its
guide class, and each broken rule is named with the lab's message.
Sources of the files: tests/data/lab-publication/SOURCES.md."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from registry.publish.labcheck import check_lab_file
from tests.conftest import ROOT

LAB = ROOT / "tests" / "data" / "lab-publication"
PUBLISHED = LAB / "published-qwen38-fp8" / "publication-manifest.json"
DRAFT = LAB / "draft-minimax-h3" / "publication-manifest.json"
PACKAGE = LAB / "package-minimax-h3" / "package.json"
CATALOG = LAB / "guide-catalog.json"


def test_the_copies_are_the_bytes_sources_md_names() -> None:
    sources = (LAB / "SOURCES.md").read_text()
    for path in (PUBLISHED, DRAFT, PACKAGE, CATALOG):
        assert hashlib.sha256(path.read_bytes()).hexdigest() in sources, path


def test_the_published_manifest_passes_every_rule_judged_here(cli) -> None:
    result = cli("publish", "--check", PUBLISHED, "--json")
    done = json.loads(result.stdout)
    assert result.exit_code == 0, done["findings"]
    assert done["kind"] == "lab-publication-manifest" and done["status"] == "published"
    assert done["findings"] == [] and done["not_checked"]  # the clone's rules are named


def test_the_draft_fails_for_the_reasons_the_lab_validator_gives(cli) -> None:
    result = cli("publish", "--check", DRAFT, "--json")
    done = json.loads(result.stdout)
    assert result.exit_code == 1
    rules = [f["rule"] for f in done["findings"]]
    assert rules == [
        "repository", "repository.source_commit", "repository.build_scripts",
        "repository.immutable_inputs", "source_repositories", "release.tag", "release.url",
        "release.assets", "binary_sections", "toolchain", "toolchain.compiler",
        "toolchain.python", "toolchain.torch", "toolchain.vllm",
        "toolchain.vllm_xpu_kernels_source_version", "toolchain.oneapi_inventory_asset",
        "toolchain.runtime_inventory_asset", "validation.build_log_asset",
        "validation.quality_evidence"]
    messages = {f["message"] for f in done["findings"]}
    assert "publication-manifest.json.release.assets must be a non-empty list" in messages
    assert "publication-manifest.json.validation.build_log_asset must name the successful " \
           "build-log asset" in messages


def edited(tmp_path: Path, source: Path, change) -> Path:
    raw = json.loads(source.read_text())
    change(raw)
    out = tmp_path / source.name
    out.write_text(json.dumps(raw, indent=2))
    return out


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m["release"]["assets"][1].update(size=0),
     "release.assets[1].size must be a positive integer"),
    (lambda m: m["release"]["assets"][2].update(url="https://x.example/other.so"),
     "url basename does not match asset name 'libgdn_attn_kernels_xe_2.so'"),
    (lambda m: m["release"]["assets"].pop(7),
     "immutable input 'experiments/qwen38-27b-b70/patches/vllm-qwen38-fp8-block-w8a16-"
     "20260826.patch' lacks matching source-patch asset"),
    (lambda m: m["release"].update(remote_verified_at="2026-09-02 01:28"),
     "published release requires remote_verified_at in UTC"),
    (lambda m: m["source_repositories"][0].update(commit="ac7509e2"),
     "source_repositories[0].commit must be a full 40-character Git commit"),
    (lambda m: m["binary_sections"]["_xpu_C.abi3.so"]["sections"].pop(".rodata"),
     "missing section hashes ['.rodata']"),
    (lambda m: m["validation"].update(quality_gate=False),
     "published recipe requires all validation gates to pass"),
])
def test_each_rule_of_the_published_manifest_is_enforced(tmp_path, change, message) -> None:
    done = check_lab_file(edited(tmp_path, PUBLISHED, change))
    assert not done.passed
    assert any(message in f.message for f in done.findings), done.findings


def test_a_lab_package_passes_and_gets_its_guide_class(cli) -> None:
    result = cli("publish", "--check", PACKAGE, "--catalog", CATALOG, "--json")
    done = json.loads(result.stdout)
    assert result.exit_code == 0, done["findings"]
    assert done["kind"] == "lab-package" and done["status"] == "candidate"
    # the lab states research-status; starter is the only class earned by rule, and the
    # starter gates it fails come first in `missing`, the catalog's stated gates after
    assert done["guide_class"] == "research-status"
    assert done["missing"][:3] == [
        "a clean-host replay (clean_host_tested)",
        "a complete dependency closure (lacking: platform_install, source_restore, build, "
        "launch)", "a beginner audience (not expert)"]
    assert "Clean-host installation and replay" in done["missing"]
    without = json.loads(cli("publish", "--check", PACKAGE, "--json").stdout)
    assert without.get("guide_class") is None
    assert any("guide-catalog" in n for n in without["not_checked"])


def test_no_guide_of_the_lab_earns_starter_and_each_keeps_its_stated_class() -> None:
    """The lab's certification doc: "No current guide is certified as a starter-guide"."""
    from registry.publish.labguide import guide_class
    from registry.publish.labrules import Rules

    guides = json.loads(CATALOG.read_text())["guides"]
    assert len(guides) == 42
    for entry in guides:
        rules = Rules()
        derived, missing = guide_class(rules, entry)
        assert rules.findings == [], (entry["id"], rules.findings)
        assert derived == entry["classification"] != "starter-guide"
        assert missing[-len(entry["missing"]):] == entry["missing"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p["commands"].pop("stop"), "commands must contain exactly"),
    (lambda p: p["commands"].update(launch="MODEL=/home/steve/m ./run.sh"),
     "commands.launch contains a host-local path"),
    (lambda p: p.update(runtime={"kind": "container", "image": "ghcr.io/x/y:latest"}),
     "container image must be pinned by sha256 digest"),
    (lambda p: p["model"].update(revision="main"),
     "model revision must be an immutable 40-character commit"),
    (lambda p: p["library"].pop("benchmark_status"),
     "a package without a featured metric must state library.benchmark_status"),
    (lambda p: p["library"].update(featured_metric={"value": 0, "unit": "tok/s", "label": "x",
                                                    "scope": "y", "evidence": "/abs.json"}),
     "library.featured_metric.value must be a positive number"),
    (lambda p: p["contributors"][1].update(status="boosted"),
     "contributors[1].status must be in"),
    (lambda p: p.update(missing=[]), "non-starter package must state missing gates"),
    (lambda p: p.update(performance_profiles=[{
        "id": "ctx", "label": "l", "x_label": "x", "scope": "s", "metric": "decode",
        "unit": "tok/s", "evidence": "a.json", "x_metric": "context_tokens",
        "points": [{"context_tokens": 4096, "value": 10}, {"context_tokens": 2048, "value": 9}]}]),
     "points must use unique, increasing context_tokens"),
])
def test_each_rule_of_a_package_is_enforced(tmp_path, change, message) -> None:
    done = check_lab_file(edited(tmp_path, PACKAGE, change))
    assert not done.passed
    assert any(message in f.message for f in done.findings), done.findings


def test_a_file_of_another_kind_is_refused_with_one_message(cli, tmp_path) -> None:
    other = tmp_path / "notes.json"
    other.write_text('{"format": "something-else"}')
    result = cli("publish", "--check", other)
    assert result.exit_code == 4 and "neither a lab publication-manifest.json" in result.stderr
    result = cli("publish", "--check", PUBLISHED, "--remote")
    assert result.exit_code == 4 and "remote audit" in result.stderr
    broken = tmp_path / "publication-manifest.json"
    broken.write_text("{")
    result = cli("publish", "--check", broken)
    assert result.exit_code == 4 and "not JSON" in result.stderr
