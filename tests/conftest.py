"""Shared fixtures: the repository layout and a CLI runner that goes through the
same error handling as the installed `registry` command."""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
# Every container a test starts carries this session's label (inherited by the
# subprocesses: workers, `registry run`); the session's end finds what is left.
os.environ.setdefault("REGISTRY_CONTAINER_SESSION", f"pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}")
# Real data from a B70 lab, byte-exact copies (tests/data/lab/README.md).
FIXTURES = ROOT / "tests" / "data" / "lab"
# The corpora beside the checkout (`../shared/fixtures`, or $REGISTRY_FIXTURES).
SHARED = Path(os.environ.get("REGISTRY_FIXTURES", ROOT.parent / "shared" / "fixtures"))


def corpus_scorer(corpus: Path) -> ModuleType:
    """A corpus' own `score.py`, loaded as a module: its rules decide what is the same."""
    spec = importlib.util.spec_from_file_location(f"{corpus.name}_score", corpus / "score.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite leaves no container behind: those labelled with this session, or whose
    owner is dead, are removed by id and fail the session."""
    from tests.containers import leftovers, remove

    left = leftovers(os.environ["REGISTRY_CONTAINER_SESSION"])
    if left:
        remove(left)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"FAILED: {len(left)} container(s) left running by the "
                                f"tests, removed: {', '.join(c[:12] for c in left)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli():
    """Run `registry ARGS...` in-process; returns exit code, stdout, stderr."""
    from registry.cli import app

    runner = CliRunner()

    def run(*args: str | Path) -> Result:
        r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        return Result(r.exit_code, r.stdout, r.stderr)

    return run


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture
def hash_cache(tmp_path_factory, monkeypatch) -> Path:
    """A private hash cache for the test (never the user's ~/.cache)."""
    path = tmp_path_factory.mktemp("hash-cache") / "hashes.sqlite"
    monkeypatch.setenv("REGISTRY_HASH_CACHE", str(path))
    return path


# ---- registry homes, keys and index databases (store, seal, verify, import tests) ----

def _pg_bin() -> Path:
    """$REGISTRY_PG_BIN, else the newest Debian-layout server (/usr/lib/postgresql/N/bin)."""
    if explicit := os.environ.get("REGISTRY_PG_BIN"):
        return Path(explicit)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _pg_bin()


def _as_postgres(*cmd: object) -> None:
    """PostgreSQL refuses to run as root: run its tools as the `postgres` user."""
    import os
    import subprocess

    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *map(str, cmd)], check=True, capture_output=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session: unix socket in a private temp dir, no
    TCP. Yields a URL template with `{db}` for the database name."""
    import os
    import shutil
    import tempfile

    if not (PG_BIN / "initdb").exists():
        if os.environ.get("REGISTRY_REQUIRE_POSTGRES"):  # CI: never pass by skipping
            pytest.fail(f"PostgreSQL server binaries are not in {PG_BIN}")
        pytest.skip("PostgreSQL server binaries are not installed")
    base = Path(tempfile.mkdtemp(prefix="registry-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    port = 5432
    _as_postgres(PG_BIN / "initdb", "-D", base / "data", "-A", "trust", "-U", "postgres")
    _as_postgres(PG_BIN / "pg_ctl", "-D", base / "data", "-l", base / "server.log", "-w",
                 "-o", f"-p {port} -k {base} -c listen_addresses=''", "start")
    try:
        yield f"postgresql+psycopg://postgres@/{{db}}?host={base}&port={port}"
    finally:
        _as_postgres(PG_BIN / "pg_ctl", "-D", base / "data", "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def fresh_database(server: str, prefix: str = "t") -> Iterator[str]:
    """A new database on the tests' PostgreSQL server (its SQLAlchemy URL), dropped after."""
    import psycopg

    name = f"{prefix}{uuid.uuid4().hex[:16]}"
    admin = server.format(db="postgres").replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    try:
        yield server.format(db=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as db:
            db.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request, monkeypatch):
    """The index database: the home's SQLite file, or a fresh PostgreSQL database."""

    if request.param == "sqlite":
        monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
        yield None
        return
    with fresh_database(request.getfixturevalue("postgres_server")) as url:
        monkeypatch.setenv("REGISTRY_DATABASE_URL", url)
        yield url


@pytest.fixture
def signing_keys(tmp_path, monkeypatch) -> Path:
    """A private keys directory holding one default Ed25519 key."""
    from registry.signing.keys import create_key

    directory = tmp_path / "keys"
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(directory))
    create_key(directory)
    return directory


@pytest.fixture
def store_home(tmp_path, database_url, signing_keys, monkeypatch):
    """An initialized home (REGISTRY_HOME points at it) whose keyring's root and signer
    is the test key; its index is SQLite or PostgreSQL (the fixture is parametrized over
    both)."""
    from registry.signing.keys import signing_key
    from registry.store.create import init_home
    from registry.store.trust import genesis

    home = init_home(tmp_path / "project" / ".registry")
    genesis(home, signing_key(signing_keys))
    monkeypatch.setenv("REGISTRY_HOME", str(home.root))
    return home


@pytest.fixture
def make_run(tmp_path):
    """Write a finished run directory: engine log, raw benchmark rows (token times
    `ttft + i * step` per row), status, environment and launch plan."""
    import json

    from registry.formats.rundir import Bench, BenchRow, SuiteRef

    def make(name: str = "run", *, steps: tuple[float, ...] = (0.01, 0.02, 0.005),
             state: str = "complete", log: str = "INFO engine started\n") -> Path:
        run = tmp_path / name
        run.mkdir()
        (run / "server.log").write_text(log + f"INFO run {name}\n")
        rows = [BenchRow(suite="tiny-cold", index=i, prompt_id=f"p{i}", prompt_sha256="0" * 64,
                         cached_tokens=0, token_ids=list(range(120)),
                         token_times_s=[0.05 + k * step for k in range(120)])
                for i, step in enumerate(steps)]
        bench = Bench(api="completions", model="tiny", params={"max_tokens": 120},
                      suites=[SuiteRef(name="tiny-cold", prompts=len(rows))], rows=rows)
        (run / "bench.json").write_text(bench.model_dump_json(by_alias=True))
        (run / "status.json").write_text(json.dumps({"state": state, "reason": None}))
        (run / "environment.json").write_text(json.dumps({"os": "linux", "python": "3.11"}))
        (run / "outputs").mkdir()
        (run / "outputs" / "texts.jsonl").write_text('{"index": 0, "text": "hi"}\n')
        return run

    return make


def resolved_identity(kv_cache: str = "bfloat16", tensor: int = 1):
    """A resolved identity as the resolver would return it (evidence from server.log)."""
    from registry.formats.identity import Evidence, ResolvedField, ResolvedIdentity, Status

    def field(declared, resolved, line):
        status = Status.confirmed if declared == resolved else Status.mismatch
        return ResolvedField(declared=declared, resolved=resolved, status=status, rule="test",
                             evidence=[Evidence(source="server.log", line=line, text="...")])

    return ResolvedIdentity(fields={
        "model.architecture": field("LlamaForCausalLM", "LlamaForCausalLM", 3),
        "precision.weights": field("bfloat16", "bfloat16", 4),
        "precision.kv_cache": field(kv_cache, kv_cache, 5),
        "parallel.tensor": field(tensor, tensor, 6),
        "engine.name": field("vllm", "vllm", 1),
        "engine.version": field("0.32.0", "0.32.0", 1),
    })


@pytest.fixture
def seal_run_dir(store_home):
    """Seal a run directory with a given identity, as `registry seal` does after resolving."""
    from registry.recipe import load_recipe
    from registry.seal import seal_resolved

    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")

    def seal(run: Path, identity=None, **kwargs):
        return seal_resolved(run, home=store_home, identity=identity or resolved_identity(),
                             recipe=recipe, **kwargs)

    return seal
