"""No traceback, ever: property-based attacks on every input the CLI reads.

Each test takes a real input (a vLLM CPU run directory, a recipe, the Laguna capsule,
a checkpoint config and safetensors file, a signing key, a sealed ledger record),
replaces one file (or one value inside a JSON file) with something hostile drawn by
hypothesis (random bytes, byte splices, JSON of any shape, nesting thousands deep,
integers of hundreds of digits, NaN and infinities, truncation) and runs the real
command. The only property: the exit code is a documented one (docs/cli.md; 70, the
internal-error code, means a bug) and nothing prints a traceback.

Example counts are small so the module runs in well under a minute on two cores;
`HYPOTHESIS_PROFILE=long` (100 examples each) digs deeper.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import git
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from registry.store.ledger import folder_at
from tests.checkpoints import build, llama_config, weights
from tests.conftest import FIXTURES, ROOT

DOCUMENTED = {0, 1, 2, 3, 4, 5, 6, 7}
TINY = ROOT / "tests" / "data" / "cpu-runs" / "tiny-bf16-kv"
CAPSULE = FIXTURES / "laguna-b70-record"
RECIPE = ROOT / "recipes" / "tiny-bf16-kv.toml"

# Derandomized (the same examples on every run) and without shrinking (a failing
# example is reported as drawn: each one runs real commands, shrinking takes minutes).
settings.register_profile("default", max_examples=15, deadline=None, derandomize=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate],
                          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                 HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("long", parent=settings.get_profile("default"), max_examples=100,
                          derandomize=False)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


# ---- what hypothesis draws ----

SCALARS = (st.none() | st.booleans() | st.integers() | st.floats()
           | st.integers(min_value=10**21, max_value=10**400) | st.text(max_size=30))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)


def _deep(n: int) -> bytes:
    return b'{"a":' * n + b"1" + b"}" * n


def kinds_of_hostile_bytes(original: bytes) -> dict[str, st.SearchStrategy[bytes]]:
    """Whole-file replacements and splices into the real bytes, by kind."""
    size = max(len(original), 1)
    return {
        "random bytes": st.binary(max_size=400),
        "JSON of any shape": VALUES.map(lambda v: json.dumps(v, allow_nan=True).encode()),
        "nested deep": st.integers(60, 6000).map(
            lambda n: b"[" * n + b"]" * n) | st.integers(60, 6000).map(_deep),
        "huge integer": st.integers(21, 500).map(lambda n: b'{"rows": [' + b"7" * n + b"]}"),
        "non-finite": st.sampled_from([b"NaN", b'{"x": Infinity}', b"[-Infinity]", b"1e999"]),
        "truncated": st.integers(0, size).map(lambda n: original[:n]),
        "spliced": st.tuples(st.integers(0, size), st.integers(0, 16),
                             st.binary(max_size=16)).map(
            lambda t: original[:t[0]] + t[2] + original[t[0] + t[1]:]),
    }


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            yield from _paths(v, (*at, i))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


HOSTILE_VALUES = st.one_of(VALUES, st.sampled_from([
    float("nan"), float("inf"), -float("inf"), 10**400, -(10**30), "\ud800", "[/red]", "",
    "../../../../etc/passwd", [], {}, None]))


def hostile(data: st.DataObject, original: bytes) -> bytes:
    """A hostile version of `original`: for a JSON file, often one value inside it
    replaced (so the document still parses and reaches the code behind the parser)."""
    kinds = kinds_of_hostile_bytes(original)
    try:
        document = json.loads(original)
    except ValueError:
        document = None
    # each kind is drawn as often as the others, so a dozen examples meet most of them
    kind = data.draw(st.sampled_from([*kinds, *(["one value"] if document is not None else [])]),
                     label="kind")
    if kind != "one value":
        return data.draw(kinds[kind], label=kind)
    path = data.draw(st.sampled_from(list(_paths(document))), label="path")
    new = data.draw(HOSTILE_VALUES, label="value")
    return json.dumps(_replace(document, path, new), allow_nan=True).encode()


# ---- running the CLI ----

def check(cli, *args: object) -> int:
    r = cli(*args)
    out = r.stdout + r.stderr
    assert r.exit_code in DOCUMENTED, (args, r.exit_code, out[-2000:])
    assert "Traceback" not in out, (args, out[-2000:])
    return r.exit_code


@contextmanager
def scratch() -> Iterator[Path]:
    """A fresh folder per example (function fixtures are shared across examples)."""
    folder = Path(tempfile.mkdtemp(prefix="registry-prop-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


RUN_FILES = ["server.log", "bench.json", "status.json", "launch.json", "environment.json",
             "recipe.json", "metrics-after.prom", "metrics-before.prom"]


@PROFILE
@given(data=st.data(), name=st.sampled_from(RUN_FILES))
def test_run_directory_files(cli, store_home, data, name) -> None:
    with scratch() as folder:
        run = folder / "run"
        shutil.copytree(TINY, run)
        (run / name).write_bytes(hostile(data, (TINY / name).read_bytes()))
        check(cli, "resolve", run, "--json")
        check(cli, "seal", run, "--json")


@PROFILE
@given(data=st.data())
def test_recipes(cli, data) -> None:
    with scratch() as folder:
        recipe = folder / "recipe.toml"
        original = RECIPE.read_bytes()
        lines = original.splitlines(keepends=True)
        at = data.draw(st.integers(0, len(lines)), label="line")
        line = data.draw(st.sampled_from([
            b"x = nan\n", b"x = inf\n", b"x = -inf\n", b"x = " + b"9" * 400 + b"\n",
            b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n", b'x = "\\ud800"\n', b"[/red]\n",
            b"x = 1e999\n", b"x = {a = {b = {c = {d = {e = {f = 1}}}}}}\n",
        ]) | st.binary(max_size=40), label="inserted")
        edited = b"".join([*lines[:at], line, *lines[at:]])
        recipe.write_bytes(edited if data.draw(st.integers(0, 3), label="how") else
                           hostile(data, original))
        check(cli, "recipe", "validate", recipe)
        check(cli, "recipe", "show", recipe, "--json")


CAPSULE_FILES = ["evidence/record-run/bench.json", "evidence/record-run/identity.txt",
                 "evidence/record-run/server.log", "evidence/record-run.sha256",
                 "manifests/runtime-lock.json", "teacher-token-oracle-v1.json",
                 "evidence/record-run/metrics-after-suite.prom"]


@PROFILE
@given(data=st.data(), name=st.sampled_from(CAPSULE_FILES))
def test_capsules(cli, store_home, data, name, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # recipes/ is found from here
    with scratch() as folder:
        capsule = folder / "capsule"
        shutil.copytree(CAPSULE, capsule)
        target = capsule / name
        target.write_bytes(hostile(data, target.read_bytes()))
        if name.startswith("evidence/record-run/") and data.draw(st.booleans(), label="re-sum"):
            _resum(capsule / "evidence" / "record-run.sha256", name, target)
        check(cli, "import", capsule, "--json")


def _resum(manifest: Path, name: str, target: Path) -> None:
    """Rewrite the manifest line of `name` (as an attacker who edits both would)."""
    entry = name.removeprefix("evidence/")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    lines = [f"{digest}  {entry}" if line.endswith(f"  {entry}") else line
             for line in manifest.read_text().splitlines()]
    manifest.write_text("\n".join(lines) + "\n")


@PROFILE
@given(data=st.data(), name=st.sampled_from(["config.json", "model.safetensors"]))
def test_checkpoints(cli, data, name) -> None:
    with scratch() as folder:
        checkpoint = folder / "ckpt"
        build(checkpoint, llama_config(), weights())
        path = checkpoint / name
        original = path.read_bytes()
        if name == "model.safetensors" and data.draw(st.booleans(), label="header only"):
            length = int.from_bytes(original[:8], "little")
            header = hostile(data, original[8:8 + length])
            path.write_bytes(len(header).to_bytes(8, "little") + header + original[8 + length:])
        else:
            path.write_bytes(hostile(data, original))
        check(cli, "inspect", checkpoint, "--json")
        check(cli, "kv", checkpoint, "--json", "--context", "128")


@PROFILE
@given(data=st.data(), which=st.sampled_from(["private", "default", "trusted"]))
def test_key_files(cli, store_home, signing_keys, data, which) -> None:
    [pem] = signing_keys.glob("*.pem")
    keep = {p: p.read_bytes() for p in (pem, signing_keys / "default")}
    [pub] = (store_home.ledger / "keyring").glob("*.json")  # the signed keyring
    target = {"private": pem, "default": signing_keys / "default", "trusted": pub}[which]
    original = target.read_bytes()
    try:
        target.write_bytes(hostile(data, original))
        if which == "trusted":
            _commit(store_home.ledger, "edit a key")
        with scratch() as folder:
            shutil.copytree(TINY, folder / "run")
            check(cli, "seal", folder / "run")
        check(cli, "keys", "list", "--json")
        check(cli, "verify", "--all")
    finally:
        for path, content in keep.items():
            path.write_bytes(content)
        pem.chmod(0o600)
        if which == "trusted":
            pub.write_bytes(original)
            _commit(store_home.ledger, "restore the key")


def _commit(ledger: Path, message: str) -> None:
    repo = git.Repo(ledger)
    repo.git.add("-A")
    if repo.is_dirty(index=True):
        repo.git.commit("-qm", message)


@PROFILE
@given(data=st.data(), name=st.sampled_from(["statement.json", "envelope.json"]))
def test_ledger_files(cli, store_home, tmp_path, data, name) -> None:
    sealed = getattr(test_ledger_files, "sealed", {})
    if store_home.root not in sealed:  # one real record per home, sealed once
        run = tmp_path / "run"
        shutil.copytree(TINY, run)
        r = cli("seal", run)
        assert r.exit_code == 0, r.stderr
        sealed[store_home.root] = r.stdout.split()[0]
        test_ledger_files.sealed = sealed  # type: ignore[attr-defined]
    record = sealed[store_home.root]
    path = folder_at(store_home.ledger, record) / name
    original = path.read_bytes()
    try:
        path.write_bytes(hostile(data, original))
        check(cli, "verify", "--all", "--json")
        check(cli, "show", record)
        check(cli, "diff", record, record)
        _commit(store_home.ledger, "tamper")
        check(cli, "verify", record)
        check(cli, "reindex")
        check(cli, "list")
    finally:
        path.write_bytes(original)
        _commit(store_home.ledger, "restore")
        cli("reindex")
