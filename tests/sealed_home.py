"""A registry home of real sealed records for the report and compare tests: the captured
CPU runs (tests/data/cpu-runs) and the Laguna B70 capsule, sealed once per module."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, ROOT

RUNS = ROOT / "tests" / "data" / "cpu-runs"
RECIPES = ROOT / "recipes"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A home with real records: bf16 sealed, made the lane's teacher, sealed twice more;
    fp8 and ngram once; the Laguna capsule imported."""
    from registry.contracts.bindings import set_teacher
    from registry.importer.capsule import Options, import_capsule
    from registry.seal import seal_run
    from registry.signing.keys import create_key, signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    base = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REGISTRY_KEYS_DIR", str(base / "keys"))
        mp.setenv("REGISTRY_HASH_CACHE", str(base / "hashes.sqlite"))
        mp.delenv("REGISTRY_DATABASE_URL", raising=False)
        create_key(base / "keys")
        home = init_home(base / ".registry")
        genesis(home, signing_key(base / "keys"))
        mp.setenv("REGISTRY_HOME", str(home.root))

        def seal(lane: str) -> str:
            return seal_run(RUNS / lane, home=home, recipe_path=RECIPES / f"{lane}.toml").id

        bf16 = [seal("tiny-bf16-kv")]
        set_teacher(home, bf16[0], "tiny-bf16-exact")
        bf16 += [seal("tiny-bf16-kv"), seal("tiny-bf16-kv")]
        others = [seal("tiny-fp8-kv"), seal("tiny-ngram")]
        [laguna] = import_capsule(FIXTURES / "laguna-b70-record", home=home, options=Options(
            recipe_path=RECIPES / "laguna-s21-b70-exact-short-decode.toml"))
        yield {"home": home, "base": base, "bf16": bf16, "others": others,
               "laguna": laguna.record.id,
               "mp": mp}
