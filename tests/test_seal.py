"""`registry seal` on a run directory made of real lab evidence (the Laguna B70 log,
its metrics and rows) with the real resolver, real git repositories for the recipe
and the launcher, real keys: identity, sources, results, refusals."""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
from pathlib import Path

import git
import pytest

from registry.errors import ExitCode
from registry.importer import convert_bench
from registry.store.objects import ObjectStore
from tests.conftest import FIXTURES, ROOT

CAPSULE = FIXTURES / "laguna-b70-record"
RUN = CAPSULE / "evidence" / "record-run"
RECIPE = "recipes/laguna-s21-b70-exact-short-decode.toml"


def commit_all(repo: git.Repo, message: str) -> str:
    repo.git.add("-A")
    repo.git.commit("-qm", message)
    return repo.head.commit.hexsha


@pytest.fixture
def recipe_repo(tmp_path) -> Path:
    """A git repository holding the Laguna recipe and the identity documents it uses."""
    repo_dir = tmp_path / "lab"
    (repo_dir / "recipes").mkdir(parents=True)
    shutil.copy(ROOT / RECIPE, repo_dir / RECIPE)
    shutil.copytree(ROOT / "identities", repo_dir / "identities")
    repo = git.Repo.init(repo_dir)
    repo.git.config("user.email", "lab@example.org")
    repo.git.config("user.name", "lab")
    commit_all(repo, "recipes")
    repo.create_remote("origin", "https://example.org/lab.git")
    return repo_dir


@pytest.fixture
def lab_run(tmp_path, recipe_repo) -> Path:
    """A finished run directory: the real Laguna log, metrics and rows, and a launch
    plan naming a launcher script committed in the lab repository."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(RUN / "server.log", run / "server.log")
    shutil.copy(RUN / "metrics-before-suite.prom", run / "metrics-before.prom")
    shutil.copy(RUN / "metrics-after-suite.prom", run / "metrics-after.prom")
    bench = convert_bench(RUN / "bench.json")
    (run / "bench.json").write_text(bench.model_dump_json(by_alias=True))
    status = {"state": "complete", "started_at": "2026-07-26T21:43Z"}
    (run / "status.json").write_text(json.dumps(status))
    launcher = recipe_repo / "serve.sh"
    launcher.write_text("#!/bin/sh\nexec vllm serve \"$@\"\n")
    commit_all(git.Repo(recipe_repo), "launcher")
    plan = {"platform": "xpu", "argv": ["vllm", "serve"], "env": {"ZE_AFFINITY_MASK": "0,1,2,3"},
            "cwd": "/", "port": 18080, "launcher": str(launcher)}
    (run / "launch.json").write_text(json.dumps(plan))
    return run


def sealed_statement(cli, record: str) -> dict:
    r = cli("show", record, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["statement"]


def test_seal_a_run(cli, store_home, lab_run, recipe_repo) -> None:
    r = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE)
    assert r.exit_code == 0, r.stderr
    record = r.stdout.split()[0]
    assert len(record) == 64
    statement = sealed_statement(cli, record)
    p = statement["predicate"]
    kv = p["identity"]["fields"]["precision.kv_cache"]
    assert (kv["declared"], kv["resolved"], kv["status"]) == ("bfloat16", "bfloat16", "confirmed")
    assert kv["evidence"][0]["source"] == "server.log" and kv["evidence"][0]["line"] > 0
    assert {e["name"]: e["passed"] for e in p["identity"]["expect"]} == {
        "dflash-fp8-draft-projections": True, "breakable-graph-topology": True}
    files = sorted(f.name for f in lab_run.iterdir())
    assert sorted(s["name"] for s in statement["subject"]) == files
    assert p["artifacts"]["server.log"] == "server.log"
    assert p["recipe"]["name"] == "laguna-s21-b70-exact-short-decode"
    assert p["environment"]["variables"] == {"ZE_AFFINITY_MASK": "0,1,2,3"}
    assert p["run"]["state"] == "complete" and p["overrides"] == [] and "parent" not in p
    contract = p["contract"]
    assert (contract["name"], contract["teacher"]) == ("bitwise-teacher",
                                                       "laguna-s21-exact-short-decode")
    assert contract["verdict"]["status"] == "refused"  # the home has no teacher for the lane
    assert cli("verify", record).exit_code == 0


def test_results_come_from_the_raw_rows(cli, store_home, lab_run, recipe_repo) -> None:
    record = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE).stdout.split()[0]
    [suite] = sealed_statement(cli, record)["predicate"]["results"]
    rows = json.loads((RUN / "bench.json").read_text())["rows"]
    spans = [row["token_id_offsets_s"][99] - row["token_id_offsets_s"][0] for row in rows]
    metrics = suite["metrics"]
    assert metrics["decode_tok_s.median"]["value"] == statistics.median(99 / s for s in spans)
    assert metrics["decode_tok_s_other_formula.median"]["value"] == statistics.median(
        100 / s for s in spans)
    assert suite["rows"] == len(rows) == 13 and suite["formula"] == "99 / (t[99] - t[0])"


def test_sources_clean_trees(cli, store_home, lab_run, recipe_repo) -> None:
    head = git.Repo(recipe_repo).head.commit.hexsha
    record = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE).stdout.split()[0]
    sources = {s["role"]: s for s in sealed_statement(cli, record)["predicate"]["sources"]}
    for role in ("recipe", "launcher"):
        assert sources[role]["commit"] == head and sources[role]["dirty"] is False
        assert sources[role]["branch"] in ("main", "master")
        assert sources[role]["remote"] == "https://example.org/lab.git"
        assert "diff_sha256" not in sources[role]
    # the recipe names the lab's engine tree, which is not on this machine: said, not hidden
    assert sources["engine"]["path"] == "${REGISTRY_SOURCES}/laguna-vllm-width12-stack"
    assert "not set here" in sources["engine"]["note"] and "commit" not in sources["engine"]


def test_sources_dirty_tree_diff_is_sealed(cli, store_home, lab_run, recipe_repo) -> None:
    repo = git.Repo(recipe_repo)
    recipe = recipe_repo / RECIPE
    recipe.write_text(recipe.read_text() + "# tuned by hand\n")
    (recipe_repo / "notes.txt").write_text("untracked scratch\n")
    status_before = repo.git.status("--porcelain")
    record = cli("seal", lab_run, "--recipe", recipe).stdout.split()[0]
    assert repo.git.status("--porcelain") == status_before  # the user's index is untouched
    statement = sealed_statement(cli, record)
    source = next(s for s in statement["predicate"]["sources"] if s["role"] == "recipe")
    assert source["dirty"] is True and source["diff_artifact"] == "sources/recipe.diff"
    subject = next(s for s in statement["subject"] if s["name"] == "sources/recipe.diff")
    assert subject["digest"]["sha256"] == source["diff_sha256"]
    diff = ObjectStore(store_home.objects).path(source["diff_sha256"]).read_bytes()
    assert hashlib.sha256(diff).hexdigest() == source["diff_sha256"]
    assert b"+# tuned by hand" in diff
    assert b"untracked scratch" not in diff  # tracked files only: never `git add -A`


def test_a_clean_filter_planted_in_the_recipe_tree_never_runs(cli, store_home, lab_run,
                                                              recipe_repo, tmp_path) -> None:
    """Issue 34, weakness 1, as reported: plain git config in the recipe's tree."""
    repo, mark = git.Repo(recipe_repo), tmp_path / "MARK"
    repo.git.config("filter.lfs.clean", f"sh -c 'touch {mark}; cat'")
    (recipe_repo / ".gitattributes").write_text("*.toml filter=lfs\n")
    commit_all(repo, "attributes")
    mark.unlink(missing_ok=True)  # the commit above ran it, as any git would
    recipe = recipe_repo / RECIPE
    recipe.write_text(recipe.read_text() + "# touched\n")
    r = cli("seal", lab_run, "--recipe", recipe, "--again")
    assert r.exit_code == 0, r.stderr
    assert not mark.exists()


def test_a_mismatch_is_refused(cli, store_home, lab_run, recipe_repo) -> None:
    recipe = recipe_repo / RECIPE
    recipe.write_text(recipe.read_text().replace('kv_cache = "bfloat16"', 'kv_cache = "fp8_e4m3"'))
    commits = len(list(git.Repo(store_home.ledger).iter_commits()))
    r = cli("seal", lab_run, "--recipe", recipe)
    assert r.exit_code == ExitCode.REFUSED
    assert "precision.kv_cache declared 'fp8_e4m3', resolved 'bfloat16' (server.log:" in r.stderr
    assert "--allow-mismatch precision.kv_cache --reason" in r.stderr
    assert len(list(git.Repo(store_home.ledger).iter_commits())) == commits
    assert not any((store_home.objects / "sha256").iterdir())  # nothing half-written


def test_an_allowed_mismatch_is_recorded(cli, store_home, lab_run, recipe_repo) -> None:
    recipe = recipe_repo / RECIPE
    recipe.write_text(recipe.read_text().replace('kv_cache = "bfloat16"', 'kv_cache = "fp8_e4m3"'))
    assert cli("seal", lab_run, "--recipe", recipe,
               "--allow-mismatch", "precision.kv_cache").exit_code == ExitCode.USAGE
    r = cli("seal", lab_run, "--recipe", recipe, "--allow-mismatch", "runtime.block_size",
            "--reason", "x")
    assert r.exit_code == ExitCode.INVALID_INPUT and "not a mismatch" in r.stderr
    r = cli("seal", lab_run, "--recipe", recipe, "--allow-mismatch", "precision.kv_cache",
            "--reason", "the lab forced BF16 at launch", "--json")
    assert r.exit_code == 0, r.stderr
    overrides = sealed_statement(cli, json.loads(r.stdout)["id"])["predicate"]["overrides"]
    assert overrides == [{"field": "precision.kv_cache", "reason": "the lab forced BF16 at launch",
                          "declared": "fp8_e4m3", "resolved": "bfloat16"}]


def test_a_failed_run_is_refused(cli, store_home, lab_run, recipe_repo) -> None:
    (lab_run / "status.json").write_text(json.dumps({"state": "failed", "reason": "engine died"}))
    r = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE)
    assert r.exit_code == ExitCode.REFUSED and "the run is failed (engine died)" in r.stderr


def test_parent_is_resolved_from_a_prefix(cli, store_home, lab_run, recipe_repo) -> None:
    first = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE).stdout.split()[0]
    r = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE, "--parent", first[:8], "--json")
    assert r.exit_code == 0, r.stderr
    assert sealed_statement(cli, json.loads(r.stdout)["id"])["predicate"]["parent"] == first
    r = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE, "--parent", "0" * 12)
    assert r.exit_code == ExitCode.NOT_FOUND


def test_without_a_key_sealing_is_refused(cli, store_home, lab_run, recipe_repo, tmp_path,
                                          monkeypatch) -> None:
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "no-keys"))
    r = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE)
    assert r.exit_code == ExitCode.REFUSED and "registry keys init" in r.stderr


def test_bad_run_directories(cli, store_home, tmp_path) -> None:
    r = cli("seal", tmp_path / "absent")
    assert r.exit_code == ExitCode.INVALID_INPUT and "no such run directory" in r.stderr
    (tmp_path / "empty").mkdir()
    r = cli("seal", tmp_path / "empty")
    assert r.exit_code == ExitCode.INVALID_INPUT and "no server.log" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_recipe_named_at_seal_must_be_the_one_the_run_used(cli, store_home, make_run) -> None:
    from registry.base.canonical import canonical_bytes
    from registry.recipe import load_recipe

    run = make_run("kept-recipe")
    ran = ROOT / "recipes" / "tiny-bf16-kv.toml"
    (run / "recipe.json").write_bytes(canonical_bytes(load_recipe(ran)))
    r = cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-fp8-kv.toml")
    assert r.exit_code == ExitCode.REFUSED
    assert "is not the recipe this run used" in r.stderr
    # make_run's log is no engine log: kept with a reason (registry/seal/proof.py)
    assert cli("seal", run, "--recipe", ran, "--allow-unproven", "a made-up log").exit_code == 0


def _lab_at(place: Path, lab: Path, run: Path) -> tuple[Path, Path]:
    """The lab repository and the run directory copied under `place` (a second checkout
    of the same tree, elsewhere on another machine), the run's launcher in the copy."""
    shutil.copytree(lab, place / "lab")
    shutil.copytree(run, place / "run")
    plan = json.loads((place / "run" / "launch.json").read_text())
    plan["launcher"] = str(place / "lab" / "serve.sh")
    (place / "run" / "launch.json").write_text(json.dumps(plan))
    return place / "lab", place / "run"


def test_sources_are_named_relative_to_the_roots_wherever_sealed(
        cli, store_home, lab_run, recipe_repo, tmp_path) -> None:
    named = []
    for place in (tmp_path / "alice", tmp_path / "srv" / "bob" / "work"):
        lab, run = _lab_at(place, recipe_repo, lab_run)
        r = cli("seal", run, "--recipe", lab / RECIPE, "--again")
        assert r.exit_code == 0, r.stderr
        statement = sealed_statement(cli, r.stdout.split()[0])
        assert str(place) not in json.dumps(statement)  # no absolute path of this machine
        named.append({s["role"]: (s.get("root"), s["path"], s.get("commit"))
                      for s in statement["predicate"]["sources"]})
    assert named[0] == named[1]
    head = git.Repo(recipe_repo).head.commit.hexsha
    # the recipe's git tree is the folder above the recipe's: both name it the same way
    assert named[0]["recipe"] == ("recipe", "..", head) == named[0]["launcher"]


def test_a_path_outside_every_root_is_named_by_its_base_name(
        cli, store_home, lab_run, recipe_repo, tmp_path) -> None:
    script = tmp_path / "opt" / "alice" / "bin" / "serve-b70.sh"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\nexec vllm serve \"$@\"\n")
    plan = json.loads((lab_run / "launch.json").read_text())
    (lab_run / "launch.json").write_text(json.dumps(plan | {"launcher": str(script)}))
    record = cli("seal", lab_run, "--recipe", recipe_repo / RECIPE).stdout.split()[0]
    statement = sealed_statement(cli, record)
    launcher = next(s for s in statement["predicate"]["sources"] if s["role"] == "launcher")
    assert (launcher["root"], launcher["path"]) == ("outside", "serve-b70.sh")
    assert launcher["sha256"] == hashlib.sha256(script.read_bytes()).hexdigest()
    assert "outside the run, recipe and model folders" in launcher["note"]
    assert "/opt/alice" not in json.dumps(statement)
    shown = cli("show", record)
    assert shown.exit_code == 0 and "<outside>/serve-b70.sh" in shown.stdout


def test_a_record_sealed_with_absolute_paths_still_verifies_and_shows_them(
        cli, store_home) -> None:
    """Records sealed before roots name their sources by the sealer's absolute path (no
    `root`): they keep parsing, verifying and showing as they were signed."""
    from registry.formats.identity import ResolvedIdentity
    from registry.formats.record import Predicate, RunInfo, Source
    from registry.store.writer import Artifact, write_record

    old = Source(role="launcher", path="/home/alice/lab/serve.sh", sha256="ab" * 32)
    predicate = Predicate(identity=ResolvedIdentity(fields={}), sources=[old],
                          run=RunInfo(state="unknown", sealed_at="2026-07-26T21:50:00+00:00"))
    sealed = write_record(store_home, [Artifact(name="server.log", data=b"INFO up\n")], predicate)
    statement = sealed_statement(cli, sealed.id)
    assert statement["predicate"]["sources"] == [
        {"role": "launcher", "path": "/home/alice/lab/serve.sh", "sha256": "ab" * 32}]
    assert cli("verify", sealed.id).exit_code == 0
    assert cli("verify", "--all").exit_code == 0
    assert "/home/alice/lab/serve.sh" in cli("show", sealed.id).stdout
