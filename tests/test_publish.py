"""Publication: a real sealed record published as a signed package, its closure checked
offline as a stranger would (files re-hashed, pins, host paths, signature) and against
real local servers (an HTTP server for release assets, `git daemon` for an upstream):
a tampered asset, a moved tag, a missing file and a host path each caught."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import socket
import statistics
import subprocess
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from registry.base.canonical import canonical_bytes
from registry.formats.display import short_id
from registry.publish.closure import check_package
from registry.publish.package import MANIFEST, PAYLOAD_TYPE, SIGNATURE, Package
from registry.signing.dsse import envelope_bytes, sign
from registry.signing.keys import signing_key
from tests.conftest import ROOT

RUN = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"
RECIPE = ROOT / "recipes" / "tiny-bf16-kv.toml"


@pytest.fixture
def record(store_home, tmp_path, hash_cache):
    """The captured CPU run sealed with the suite it sent, as `registry run` keeps it."""
    from registry.seal import seal_run

    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    (run / "suites").mkdir()
    shutil.copy(ROOT / "recipes" / "suites" / "tiny-cold-v1.jsonl",
                run / "suites" / "tiny-cold.jsonl")
    return seal_run(run, home=store_home, recipe_path=RECIPE).id


def published(cli, record, tmp_path) -> Path:
    out = tmp_path / "pkg"
    result = cli("publish", record[:12], "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    return out


def resign(folder: Path, change) -> None:
    """The publisher pinning more (or an attacker editing): the manifest rewritten and
    signed again with the test key."""
    raw = json.loads((folder / MANIFEST).read_text())
    change(raw)
    payload = canonical_bytes(Package.model_validate(raw))
    (folder / MANIFEST).write_bytes(payload)
    keyid, key = signing_key()
    (folder / SIGNATURE).write_bytes(envelope_bytes(sign(payload, keyid, key, PAYLOAD_TYPE)))


def test_a_record_is_published_with_what_it_ran_and_nothing_of_the_host(
        cli, record, tmp_path, store_home):
    out = published(cli, record, tmp_path)
    package = json.loads((out / MANIFEST).read_text())
    assert package["record"] == record
    assert (out / "recipe.toml").read_bytes() == RECIPE.read_bytes()
    suite = out / "suites" / "tiny-cold-v1.jsonl"
    assert hashlib.sha256(suite.read_bytes()).hexdigest() == package["suites"][0]["sha256"]
    assert sorted(package["commands"]) == ["benchmark", "health", "launch", "preflight", "stop"]
    assert package["figures"] and all(f["quality"] for f in package["figures"])
    text = (out / MANIFEST).read_text()
    assert str(tmp_path) not in text and socket.gethostname() not in text
    result = cli("publish", "--check", out, "--json")
    closure = json.loads(result.stdout)
    codes = {f["code"] for f in closure["findings"]}
    # the captured run names no model revision or engine commit: honestly not closed
    assert result.exit_code == 1
    assert {"model_revision_unpinned", "engine_source_unpinned"} <= codes
    assert "signature_invalid" not in codes and "file_hash_mismatch" not in codes
    assert closure["guide_class"] == "lab-replay"
    assert closure["missing"][0] == "every input pinned, no host path"


def test_a_changed_file_a_host_path_and_a_forged_manifest_are_caught(cli, record, tmp_path):
    out = published(cli, record, tmp_path)
    suite = out / "suites" / "tiny-cold-v1.jsonl"
    suite.write_bytes(suite.read_bytes().replace(b"a", b"b", 1))
    (out / "NOTES.md").write_text("built on /home/steve/lab with care\n")
    codes = {f.code for f in check_package(out).findings}
    assert {"file_hash_mismatch", "host_path"} <= codes
    raw = json.loads((out / MANIFEST).read_text())
    raw["figures"][0]["value"] *= 2
    (out / MANIFEST).write_text(json.dumps(raw))
    assert "signature_invalid" in {f.code for f in check_package(out).findings}


def test_publishing_refuses_a_folder_in_use_and_writes_nothing(cli, record, tmp_path):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = cli("publish", record[:12], "--out", out)
    assert result.exit_code == 4 and "not an empty folder" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert not list(tmp_path.glob(".publish-*"))


@pytest.fixture
def servers(tmp_path):
    """A release folder over HTTP and a git repository over `git daemon`, on loopback."""
    releases = tmp_path / "releases"
    releases.mkdir()
    (releases / "kernels.whl").write_bytes(b"wheel bytes\n" * 100)
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(releases))
    http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    repos = tmp_path / "repos"
    src = repos / "engine.git"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    git = ["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t"]
    (src / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    first = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    daemon = subprocess.Popen(["git", "daemon", f"--base-path={repos}", "--export-all",
                               "--listen=127.0.0.1", f"--port={port}", "--reuseaddr",
                               str(repos)], stderr=subprocess.DEVNULL)
    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    yield {"http": f"http://127.0.0.1:{http.server_address[1]}", "releases": releases,
           "git": f"git://127.0.0.1:{port}/engine.git", "commit": first, "git_cmd": git}
    daemon.terminate()
    daemon.wait(timeout=10)
    http.shutdown()


def pin_everything(servers, raw) -> None:
    wheel = (servers["releases"] / "kernels.whl").read_bytes()
    raw["model"].update(revision="a" * 40, manifest_sha256="b" * 64)
    raw["engine"]["source"].update(url=servers["git"], commit=servers["commit"], tag="v1")
    raw["assets"] = [{"name": "kernels.whl", "kind": "wheel",
                      "url": f"{servers['http']}/kernels.whl", "size": len(wheel),
                      "sha256": hashlib.sha256(wheel).hexdigest()}]


def test_remote_checks_fetch_every_asset_and_upstream_again(cli, record, tmp_path, servers):
    out = published(cli, record, tmp_path)
    resign(out, functools.partial(pin_everything, servers))
    result = cli("publish", "--check", out, "--remote", "--json")
    closure = json.loads(result.stdout)
    assert result.exit_code == 0, closure["findings"]
    assert closure["remote_verified_at"].endswith("Z")
    # the package is not promoted: a candidate, and it says what the next class needs
    assert closure["guide_class"] == "candidate-portable-repro"
    assert closure["missing"] == ["promoted, every upstream fetched again"]

    (servers["releases"] / "kernels.whl").write_bytes(b"wheel bytes\n" * 99 + b"wheel bytez\n")
    git = servers["git_cmd"]
    (Path(git[2]) / "a.txt").write_text("two\n")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    subprocess.run([*git, "tag", "-f", "v1"], check=True, capture_output=True)
    codes = {f.code for f in check_package(out, remote=True).findings}
    assert {"asset_hash_mismatch", "upstream_tag_moved"} <= codes
    (servers["releases"] / "kernels.whl").unlink()
    codes = {f.code for f in check_package(out, remote=True).findings}
    assert "asset_unreachable" in codes


def test_a_profile_holds_measured_points_only(store_home, make_run, hash_cache):
    """Three records of one lane at concurrency 1, 2 and 4: the valid ones become points in
    ascending order with their records as evidence; a degraded one is withheld, named."""
    from registry.publish.profile import XMetric, profile_of
    from registry.recipe import load_recipe
    from registry.seal import seal_resolved
    from tests.conftest import resolved_identity

    base = load_recipe(RECIPE)

    def sealed(concurrency: int, steps: list[float]) -> str:
        recipe = base.model_copy(update={"benchmark": base.benchmark.model_copy(
            update={"concurrency": concurrency})})
        return seal_resolved(make_run(f"c{concurrency}", steps=tuple(steps)), home=store_home,
                             identity=resolved_identity(), recipe=recipe).id

    steady = [0.01 + i * 0.0005 for i in range(8)]
    ids = [sealed(4, [s * 2 for s in steady]), sealed(1, steady), sealed(2, steady[:3])]
    profile = profile_of(store_home, ids, XMetric.concurrent_sequences)
    assert [p.x for p in profile.points] == [1, 4]
    assert [p.evidence for p in profile.points] == [ids[1], ids[0]]
    one = statistics.median(99 / (99 * s) for s in steady)
    assert profile.points[0].value == pytest.approx(one)
    assert profile.withheld and short_id(ids[2]) in profile.withheld[0]
    with pytest.raises(Exception, match="at least two measured points"):
        profile_of(store_home, ids[1:], XMetric.concurrent_sequences)


def test_contributor_status_is_derived_from_evidence(cli, record, tmp_path, store_home):
    """Stated `integrated`: the rights and license reach `credited`; a signed A/B whose
    boost was decided faster reaches `validated-boost`; without its patch in the package
    it stops there, and the package says so beside the stated status."""
    from registry.formats.verification import Check, Figure, Policy, Result, Verifier, verification
    from registry.signing.keys import signing_key
    from registry.store.verifications import seal_verification

    keyid, key = signing_key()
    boost = Check(name="boost/tiny-cold", result=Result.passed, detail="faster", figures=[
        Figure(metric="tiny-cold/boost_pct", value=6.1, low=2.0, high=9.9, unit="%")])
    ab = seal_verification(store_home, verification(
        {"side-b": record}, [boost], policy=Policy(name="ab", uri="docs/measurement.md"),
        verifier=Verifier.registry("ab", keyid)), (keyid, key))
    people = tmp_path / "contributors.toml"
    people.write_text(f"""
[[contributor]]
id = "dominick253"
kind = "external"
status = "integrated"
evidence = ["{ab.id[:12]}"]
intake = {{ right_to_submit = true, license = "Apache-2.0", patch_sha256 = "{'c' * 64}" }}

[[contributor]]
id = "someone"
kind = "external"
status = "credited"
""")
    out = tmp_path / "pkg"
    result = cli("publish", record[:12], "--out", out, "--contributors", people, "--json")
    assert result.exit_code == 0, result.stderr
    first, second = json.loads(result.stdout)["contributors"]
    assert first["status"] == "validated-boost" and first["stated_status"] == "integrated"
    assert "+6.10%" in first["validated_effect"] and "not among" in first["reason"]
    assert second["status"] == "acknowledged" and "stated credited" in second["reason"]
    assert "signature_invalid" not in {f.code for f in check_package(out).findings}
