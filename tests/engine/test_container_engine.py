"""The llama.cpp lane in a container on podman (an image made here by tools/llama_image.sh:
`podman import` of the cached llama-server and its libraries): sealed, diffed against the
same lane on the host (only the container axis differs) and reproduced; a tag-only image
is refused for sealing; the launcher lane keeps its printed settings as declared identity."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from registry.engines.llamacpp.server import cached_build
from tests.conftest import ROOT
from tests.engine.conftest import run_cli

pytestmark = [pytest.mark.llamacpp, pytest.mark.skipif(
    not cached_build().is_file() or shutil.which("podman") is None,
    reason="needs the llama-server build and podman (tools/setup.sh)")]
CONTAINER = """[engine.container]
image = "{image}"
oci_runtime = "/usr/sbin/runc"
ulimits = {{ nofile = "1024:1024", nproc = "1024:1024" }}
memory = "2g"
memory_swap = "2g"
"""


@pytest.fixture(scope="module")
def gguf_models(tiny_models: Path) -> Path:
    subprocess.run([sys.executable, str(ROOT / "tools" / "tiny_gguf.py"), "--models",
                    str(tiny_models), "--llama-cpp", str(cached_build().parent.parent)],
                   check=True, capture_output=True)
    return tiny_models


@pytest.fixture(scope="module")
def image() -> str:
    done = subprocess.run([str(ROOT / "tools" / "llama_image.sh")], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _recipe(folder: Path, image: str) -> Path:
    text = (ROOT / "recipes" / "tiny-llamacpp-f16-kv.toml").read_text()
    text = text.replace('path = "suites/', f'path = "{ROOT}/recipes/suites/')
    path = folder / f"container-{len(list(folder.glob('*.toml')))}.toml"
    path.write_text(text.replace("[engine.args]", CONTAINER.format(image=image) +
                                 "\n[engine.args]"))
    return path


def _fields(rid: str) -> dict[str, Any]:
    code, shown, stderr = run_cli("show", rid, "--json")
    assert code == 0, stderr
    fields: dict[str, Any] = shown["statement"]["predicate"]["identity"]["fields"]
    return fields


def test_the_lane_in_a_container_seals_diffs_and_reproduces(home: Path, gguf_models: Path,
                                                            image: str, tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, image)
    code, boxed, stderr = run_cli("run", recipe, "--models", gguf_models,
                                  "--out", home / "runs" / "boxed", "--json")
    assert code == 0, stderr
    code, host, stderr = run_cli("run", ROOT / "recipes" / "tiny-llamacpp-f16-kv.toml",
                                 "--models", gguf_models, "--out", home / "runs" / "host",
                                 "--json")
    assert code == 0, stderr
    fields = _fields(boxed["record"]["id"])
    digest = image.rsplit("@", 1)[1]
    assert fields["container.image_digest"]["resolved"] == digest
    assert fields["container.image_digest"]["status"] == "confirmed"
    assert fields["container.runtime"]["resolved"] == "podman"
    assert fields["container.runtime_version"]["resolved"].startswith("podman version")
    assert fields["container.image_id"]["resolved"].startswith("sha256:")
    assert not list(subprocess.run(["podman", "ps", "-aq"], capture_output=True,
                                   text=True).stdout.split())  # stopped and removed
    cleanup = json.loads((home / "runs" / "boxed" / "status.json").read_text())["cleanup"]
    first = cleanup["steps"][0]  # through the runtime, by the container's id
    assert first["step"] == "podman stop" and first["gone"], cleanup
    assert first["detail"].startswith("podman kill --signal SIGTERM ") and \
        "SIGKILL" not in first["detail"] and cleanup["stopped_by"] == "podman stop", cleanup
    code, diff, stderr = run_cli("diff", host["record"]["id"], boxed["record"]["id"], "--json")
    assert code in (0, 1), stderr
    # identity and environment: only the container axis (timing figures differ run to run)
    changed = {d["name"] for d in diff["identity"]
               if d["changed"] and d["kind"] in ("identity", "environment")}
    assert changed == {"container.image_digest", "container.image_id", "container.runtime",
                       "container.runtime_version", "container.image_created"}, changed
    code, done, stderr = run_cli("reproduce", boxed["record"]["id"], "--models", gguf_models,
                                 "--out", home / "runs" / "boxed-again", "--json")
    assert code == 0 and done["passed"], (stderr, done)


def test_a_tag_only_image_is_refused_for_sealing(home: Path, gguf_models: Path, image: str,
                                                 tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, image.rsplit("@", 1)[0])
    code, _, stderr = run_cli("run", recipe, "--models", gguf_models,
                              "--out", home / "runs" / "tagged", "--json")
    assert code != 0 and "is a tag, not a digest" in stderr, stderr


def test_the_launcher_lane_keeps_its_printed_settings(home: Path, gguf_models: Path) -> None:
    code, done, stderr = run_cli("run", ROOT / "recipes" / "tiny-llamacpp-launcher.toml",
                                 "--models", gguf_models, "--out", home / "runs" / "launched",
                                 "--json")
    assert code == 0, stderr
    fields = _fields(done["record"]["id"])
    assert fields["runtime.ctx_size"]["declared"] == 8192
    assert fields["runtime.ctx_size"]["status"] == "confirmed"
    assert len(fields["launcher.sha256"]["resolved"]) == 64
    log = (home / "runs" / "launched" / "server.log").read_text()
    assert "ctx_size=8192\n" in log and "--- server ---\n" in log


def test_a_launcher_that_prints_one_setting_and_runs_another_is_a_mismatch(
        home: Path, gguf_models: Path, tmp_path: Path) -> None:
    """The printed settings are declared identity: held against the server's own lines."""
    script = tmp_path / "lying.sh"
    script.write_text("#!/bin/sh\nshift\necho ctx_size=4096\necho '--- server ---'\n"
                      'exec "$@" --ctx-size 8192\n')
    script.chmod(0o755)
    recipe = tmp_path / "lying.toml"
    text = (ROOT / "recipes" / "tiny-llamacpp-launcher.toml").read_text()
    recipe.write_text(text.replace('launcher = "launchers/llama-server.sh"',
                                   f'launcher = "{script}"').replace(
        'launcher_args = ["--label=tiny"]', "launcher_args = []").replace(
        'path = "suites/', f'path = "{ROOT}/recipes/suites/'))
    out = home / "runs" / "lying"
    code, _, stderr = run_cli("run", recipe, "--models", gguf_models, "--out", out, "--no-seal",
                              "--json")
    assert code == 0, stderr
    code, resolved, stderr = run_cli("resolve", out, "--json")
    ctx = resolved["fields"]["runtime.ctx_size"]
    assert (ctx["declared"], ctx["resolved"], ctx["status"]) == (4096, 8192, "mismatch"), ctx


def test_reproducing_a_launcher_record_needs_no_recipe(home: Path, gguf_models: Path) -> None:
    """The record carries its launcher (launcher.script, by digest): reproduce restores it
    without --recipe (tests/test_reproduce_launcher.py covers the edited and the absent
    launcher on the scripted engine)."""
    recipe = ROOT / "recipes" / "tiny-llamacpp-launcher.toml"
    code, done, stderr = run_cli("run", recipe, "--models", gguf_models,
                                 "--out", home / "runs" / "launched-2", "--json")
    assert code == 0, stderr
    rid = done["record"]["id"]
    code, again, stderr = run_cli("reproduce", rid, "--models", gguf_models,
                                  "--out", home / "runs" / "launched-again", "--json")
    assert code == 0 and again["passed"], (stderr, again)
    facts = (home / "runs" / "launched-again" / "launcher.json").read_text()
    assert (home / "runs" / "launched-2" / "launcher.json").read_text().count(
        facts.split('"sha256": "')[1][:64]) == 1


def test_an_image_the_runtime_lacks_is_refused_before_anything_is_written(
        gguf_models: Path, tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "localhost/registry-no-such-image@sha256:" + "0" * 64)
    out = tmp_path / "never"
    code, _, stderr = run_cli("run", recipe, "--models", gguf_models, "--out", out,
                              "--no-seal", "--json")
    assert code == 4 and "image inspect failed" in stderr and "Traceback" not in stderr, stderr
    assert not out.exists()
