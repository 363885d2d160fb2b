"""Read commands start like git's: `registry list` and `show` import only what they
use (no SQLAlchemy, numpy, rich, GitPython, torch or vllm, and no package of the
registry they do not read). A module that joins their import set fails here: make its
import lazy, or add it to the lists below with the reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

THIRD_PARTY = {  # what the commands need: arguments, models, signatures, canonical JSON
    "typer", "shellingham", "annotated_doc", "pydantic", "pydantic_core", "annotated_types",
    "typing_extensions", "typing_inspection", "cryptography", "rfc8785"}
READ_PATH = {  # the registry modules every record reader needs
    "registry", "registry.__main__", "registry.errors", "registry.cli", "registry.cli.app",
    "registry.cli.options",
    "registry.cli.output", "registry.cli.records", "registry.base", "registry.base.canonical",
    "registry.base.files", "registry.base.model", "registry.base.safeload", "registry.formats",
    "registry.formats.figures", "registry.formats.identity", "registry.formats.record",
    "registry.formats.runfacts", "registry.formats.unproven", "registry.formats.verdict",
    "registry.signing", "registry.signing.dsse",
    "registry.signing.keyring", "registry.signing.keys", "registry.signing.signed",
    "registry.store", "registry.store.git", "registry.store.home", "registry.store.ledger",
    "registry.store.query", "registry.store.rows", "registry.store.sqlite_read",
    "registry.store.tables", "registry.store.trust",
    "registry.base.versions",  # a statement's format version, checked before it is shown
    "registry.signing.failures",  # the kind of a failed signature check
    "registry.store.lock",  # the keyring memory in trust.json is written under the lock
    "registry.base.text",  # record text printed with its controls escaped
    "registry.formats.display",  # the one display policy every view writes values by
    "registry.base.redaction"}  # the secrets a statement says were taken out
ALLOWED = {
    "list": READ_PATH | {"registry.compare", "registry.compare.table"},  # --where terms
    "show": READ_PATH | {"registry.measure", "registry.measure.display",  # figure text
                         # the signed artifacts checked in the store (hashes cached)
                         "registry.store.objects", "registry.base.hashing",
                         "registry.cli.exits",  # its exit code: 1 or 3 when not as sealed
                         "registry.store.shown", "registry.store.verifications",  # its
                         "registry.store.attestations",  # verifications
                         "registry.formats.verification",
                         "registry.measure.evidence"},  # each start's disturbance evidence
}
NEVER = {  # modules a plain `list` or `show` once imported and no longer needs
    "registry.formats.rundir",  # the run directory's own formats (runfacts: what a record keeps)
    "registry.compare.table",  # `list --where` terms only
    "cryptography.hazmat.primitives.serialization",  # keyring PEMs: registry/signing/keys.py
    "registry.signing.commits",  # writing commits (`verify` reads them)
    "tomllib", "glob"}  # recipe readers, debris clearing
NEVER |= {"importlib.metadata", "email", "zipfile"}  # pydantic's plugin loader: __main__.py
CODE = """
import json, sys
from registry.__main__ import run
sys.argv[0] = "registry"
try:
    run()
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported(*args: str, env: dict[str, str] | None = None) -> set[str]:
    done = subprocess.run([sys.executable, "-c", CODE, *args], capture_output=True, text=True,
                          check=True, env=env)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_list_and_show_import_only_what_they_use(store_home, make_run, seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    runs = {"list": [("list",), ("list", "--json"), ("list", "--where", "lane=x")],
            "show": [("show", sealed.id[:12]), ("show", sealed.id[:12], "--json")]}
    for command, variants in runs.items():
        for args in variants:
            modules = imported(*args)
            ours = {m for m in modules if m.split(".")[0] == "registry"}
            assert ours <= ALLOWED[command], (args, sorted(ours - ALLOWED[command]))
            others = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names)
            others = {m for m in others if not m.startswith("_")} - {"registry"}
            assert others <= THIRD_PARTY, (args, sorted(others - THIRD_PARTY))
            if "--where" not in args:
                assert not modules & NEVER, (args, sorted(modules & NEVER))


def test_help_loads_no_library() -> None:
    ours = {m for m in imported("--help") if m.startswith("registry.")}
    groups = {m for m in ours if m.split(".")[:2] == ["registry", "cli"]}
    # the display policy (stdlib only, about 1 ms) is how every command writes an id
    assert ours - groups == {"registry.__main__", "registry.errors", "registry.formats",
                             "registry.formats.display"}, sorted(ours - groups)


def test_the_models_read_paths_build_carry_no_string_annotations() -> None:
    """`from __future__ import annotations` makes pydantic evaluate every field's
    annotation from its text (typing.ForwardRef, a compile each) when a model class is
    made: the models list and show import are written with real annotations."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for module in sorted(READ_PATH | ALLOWED["show"]):
        path = root / (module.replace(".", "/") + ".py")
        if not path.is_file():
            path = root / module.replace(".", "/") / "__init__.py"
        text = path.read_text()
        if "(Frozen):" in text:
            assert "from __future__ import annotations" not in text, module


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_plugin_the_user_keeps_on_gets_pydantic_s_own_loader(store_home) -> None:
    """Only with every plugin off does the stand-in replace pydantic's plugin loader."""
    import os

    some = imported("list", env={**os.environ, "PYDANTIC_DISABLE_PLUGINS": "one_plugin"})
    assert "importlib.metadata" in some


def test_the_plugin_loader_s_stand_in_finds_none_and_defers_the_rest() -> None:
    code = """
import os, sys
os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
from registry.__main__ import PLUGIN_LOADER, _no_plugin_loader
_no_plugin_loader()
from pydantic import BaseModel
class M(BaseModel):
    x: int
assert M(x="1").x == 1                   # validators are built without a plugin
assert "importlib.metadata" not in sys.modules
from pydantic.plugin._loader import get_plugins
assert tuple(get_plugins()) == ()
import pydantic.plugin._loader as loader
assert loader.PYDANTIC_ENTRY_POINT_GROUP == "pydantic"  # from the real loader
assert "importlib.metadata" in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True)
