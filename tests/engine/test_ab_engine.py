"""`registry ab` on the real vLLM CPU engine: a recipe against itself, two starts of
each in A B B A order, every start sealed, the boost's interval and the comparison
attestation from the sealed rows, the verdict saying why. Four engine starts."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.conftest import ROOT

pytestmark = pytest.mark.engine


def test_ab_of_a_recipe_against_itself(tmp_path, tiny_models, monkeypatch) -> None:
    from registry.cli import app
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("REGISTRY_HASH_CACHE", str(tmp_path / "hashes.sqlite"))
    create_key(tmp_path / "keys")
    home = init_home(tmp_path / ".registry")
    genesis(home, signing_key(tmp_path / "keys"))
    monkeypatch.setenv("REGISTRY_HOME", str(home.root))
    recipe = ROOT / "recipes/tiny-bf16-kv.toml"
    r = CliRunner().invoke(app, ["ab", str(recipe), str(recipe), "--starts", "2", "--models",
                                 str(tiny_models), "--out", str(tmp_path / "ab"), "--json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    done = json.loads(r.stdout)
    assert [s["side"] for s in done["starts"]] == ["A", "B", "B", "A"]
    assert done["outcome"]["comparable"]  # one recipe: bitwise the same tokens
    [suite] = done["suites"]
    assert len(suite["a_starts"]) == 2 and len(suite["b_starts"]) == 2
    assert suite["verdict"] in {"no difference", "inconclusive", "faster", "slower"}
    # a start whose rows were all flagged (a busy host) has no figure, and one the
    # disturbance rule marks is kept out and named: the interval counts the other starts,
    # analysed as independent (docs/measurement.md, "Sequential starts")
    why = suite["why"]
    kept_out = {int(k) for k in why["disturbed"]}
    for s in done["starts"]:
        if s["figures"][0].get("value") and s["start"] not in kept_out:
            assert s["start"] in why["used"]
    n = {side: sum(1 for s in done["starts"] if s["side"] == side and s["start"] in why["used"])
         for side in ("A", "B")}
    if not all(n.values()):
        assert suite.get("interval") is None and suite["verdict"] == "inconclusive"
    elif n["A"] + n["B"] > 2:
        assert suite["interval"]["df"] == n["A"] + n["B"] - 2
    assert "no GPU samples" in why["basis"] and why["reason"]
    assert done["stopped"] in ("the planned 2 starts a side ran",
                               "decided after 2 starts a side")
    assert done["verification"]
    shown = CliRunner().invoke(app, ["show", done["starts"][0]["record"], "--json"])
    assert [v["id"] for v in json.loads(shown.stdout)["verifications"]] == [done["verification"]]
