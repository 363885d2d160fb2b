"""The failures users hit (issue 24, item 6), each one clear message and a documented
exit code: a corrupt or missing index is rebuilt by `reindex`; `show` of a record whose
artifact was changed or lost says so under a banner and exits 1 or 3."""

from __future__ import annotations

import json
import shutil

import pytest

from registry.errors import ExitCode
from tests.conftest import ROOT

RUN = ROOT / "tests" / "data" / "cpu-runs" / "tiny-fp8-kv"


@pytest.fixture
def sealed(cli, store_home, tmp_path) -> str:
    run = shutil.copytree(RUN, tmp_path / "run")
    r = cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-fp8-kv.toml", "--json")
    assert r.exit_code == 0, r.stderr
    return str(json.loads(r.stdout)["id"])


def test_reindex_rebuilds_a_corrupt_or_missing_index(cli, store_home, sealed,
                                                     database_url) -> None:
    if database_url is not None:
        pytest.skip("a SQLite file's corruption")
    index = store_home.root / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        index.with_name(index.name + suffix).unlink(missing_ok=True)
    index.unlink()  # a new file: the seal's connections in this process keep the old one
    index.write_bytes(b"not a database at all\n")
    r = cli("list")
    assert r.exit_code == ExitCode.NOT_FOUND and "file is not a database" in r.stderr
    assert "registry reindex" in r.stderr and "Traceback" not in r.stderr
    r = cli("reindex")
    assert r.exit_code == 0 and "indexed 1 records" in r.stdout, r.stderr
    assert [p.name.split("-")[0] for p in store_home.root.glob("index.sqlite.corrupt-*")] == [
        "index.sqlite.corrupt"]  # set aside, not deleted
    assert json.loads(cli("list", "--json").stdout)[0]["id"] == sealed
    index.unlink()
    assert cli("reindex").exit_code == 0
    assert json.loads(cli("list", "--json").stdout)[0]["id"] == sealed


def test_show_of_a_record_with_a_changed_or_lost_artifact(cli, store_home, sealed) -> None:
    shown = json.loads(cli("show", sealed[:12], "--json").stdout)
    assert shown["artifacts"] == []
    digest = next(s["digest"]["sha256"] for s in shown["statement"]["subject"]
                  if s["name"] == "server.log")
    path = store_home.objects / "sha256" / digest[:2] / digest[2:]
    path.chmod(0o644)
    path.write_bytes(path.read_bytes() + b"one more line\n")
    r = cli("show", sealed[:12])
    assert r.exit_code == ExitCode.FAILED, r.stderr
    assert r.stdout.startswith("INVALID: artifact server.log: stored bytes no longer hash")
    assert cli("show", sealed[:12], "--json").exit_code == ExitCode.FAILED
    path.unlink()
    r = cli("show", sealed[:12])
    assert r.exit_code == ExitCode.UNVERIFIABLE and r.stdout.startswith(
        "UNVERIFIABLE: artifact server.log: object")


def test_a_missing_run_directory_is_named_as_one(cli, store_home, sealed) -> None:
    for args in (("diff", "./runs/x", sealed[:12]), ("resolve", "/missing")):
        r = cli(*args)
        assert r.exit_code == ExitCode.INVALID_INPUT, (args, r.stderr)  # docs/cli.md: 4
        assert "no such run directory" in r.stderr and "hexadecimal" not in r.stderr


def test_a_lane_that_is_a_recipe_name_says_so(cli, store_home, sealed) -> None:
    r = cli("list", "--where", "lane=tiny-fp8-kv-recipe-does-not-exist")
    assert r.exit_code == 0 and "0 records" in r.stdout and "recipe" not in r.stdout.split(
        "0 records")[1]
    recipe = json.loads(cli("list", "--json").stdout)[0]["recipe"]
    r = cli("list", "--where", f"lane={recipe}x")
    assert "--where recipe" not in r.stdout
    bf16 = shutil.copytree(ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv",
                           store_home.root.parent / "bf16")
    assert cli("seal", bf16, "--recipe", ROOT / "recipes" / "tiny-bf16-kv.toml").exit_code == 0
    r = cli("list", "--where", "lane=tiny-bf16-kv")  # the recipe's name; its lane differs
    assert "0 records" in r.stdout
    assert "recipe tiny-bf16-kv has records (lane tiny-bf16-exact): --where " \
           "recipe=tiny-bf16-kv" in r.stdout


def test_sealing_the_same_run_again_returns_its_record(cli, store_home, sealed,
                                                       tmp_path) -> None:
    run = tmp_path / "run"  # the fixture's run directory, sealed once already
    r = cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-fp8-kv.toml")
    assert r.exit_code == 0 and r.stdout.startswith(sealed)
    assert "already sealed" in r.stdout and "--again" in r.stdout
    again = json.loads(cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-fp8-kv.toml",
                           "--json").stdout)
    assert (again["id"], again["already"]) == (sealed, True)
    assert len(json.loads(cli("list", "--json").stdout)) == 1
    r = cli("seal", run, "--recipe", ROOT / "recipes" / "tiny-fp8-kv.toml", "--again", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["id"] != sealed
    assert len(json.loads(cli("list", "--json").stdout)) == 2


def test_init_before_keys_init_says_to_make_a_key_first(cli, tmp_path, monkeypatch) -> None:
    """A newcomer's home with no key and an empty ledger: the hint is `keys init` then
    `init`, not a team's pin (there is nothing to pin yet)."""
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    home = tmp_path / ".registry"
    r = cli("init", "--home", home)
    assert r.exit_code == 0 and "no signing key yet: registry keys init" in r.stdout
    r = cli("list", "--home", home)
    assert r.exit_code == ExitCode.UNVERIFIABLE and "Traceback" not in r.stderr
    assert "registry keys init, then registry init again" in r.stderr
    assert cli("keys", "init").exit_code == 0
    assert cli("init", "--home", home).exit_code == 0
    assert cli("list", "--home", home).exit_code == 0
