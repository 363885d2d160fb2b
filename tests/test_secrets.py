"""Secrets are never signed (issue 34, weakness 11): recipes refuse them, run folders,
capsules, engine logs and bench imports are redacted before hashing (the record says
what, where and why), a private key is refused everywhere. Every input is written by
hand; the secrets are made up."""

from __future__ import annotations

import json
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.base.secrets import REDACTED, findings, redact_text
from registry.errors import ExitCode
from registry.store.ledger import folder_at
from tests.conftest import FIXTURES, ROOT, SHARED

HF = "hf_" + "Q" * 34
OPENAI = "sk-proj-" + "Z" * 40
API_KEY = "tok-secret-4711"
PASSWORD = "hunter2pass"
SECRETS = (HF, OPENAI, API_KEY, PASSWORD)
NONDEFAULT = ("INFO 07-26 21:43:01 [utils.py:1] non-default args: {'model': '/models/tiny', "
              f"'api_key': ['{API_KEY}'], 'max_num_batched_tokens': 8192}}\n")
ENV_DUMP = f"PATH=/usr/bin\nHF_TOKEN={HF}\nOPENAI_API_KEY={OPENAI}\nVLLM_CPU_KVCACHE_SPACE=4\n"


def stored_bytes(home) -> bytes:
    """Everything the home holds: objects, ledger, index."""
    return b"".join(p.read_bytes() for p in sorted(home.root.rglob("*")) if p.is_file())


def leaked(data: bytes | str) -> list[str]:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("line, kind", [
    (f"HF_TOKEN={HF}", "name"), (f'"OPENAI_API_KEY": "{OPENAI}"', "name"),
    (f"AWS_SECRET_ACCESS_KEY = '{PASSWORD}'", "name"), (NONDEFAULT.strip(), "name"),
    (f'argv: ["vllm", "--api-key", "{API_KEY}"]', "name"),
    (f"remote https://bob:{PASSWORD}@example.org/lab.git", "url-userinfo"),
    (f"a token {HF} in prose", "token"), (f"key {OPENAI}.", "token"),
    ("ghp_" + "a" * 36, "token"), ("xoxb-1234567890-abcdefghij", "token"),
])
def test_each_kind_is_found_and_redacted(line, kind) -> None:
    text, found = redact_text(line + "\n", "f.txt")
    assert [f.kind for f in found][:1] == [kind] and found[0].line == 1
    assert REDACTED in text and not leaked(text)


@pytest.mark.parametrize("line", [
    "max_num_batched_tokens=8192", "'bos_token': '<s>'", 'HF_TOKEN = "${HF_TOKEN}"',
    "ssh://git@example.org/lab.git", "VLLM_API_KEY=", "api_key=None",
    "print_info: BOS token = 200000 '<|begin_of_text|>'", "max_prompt_adapter_token=0",
    "--Inter-token Latency--",
])
def test_what_is_not_a_secret_is_left_alone(line) -> None:
    assert findings(line, "f") == []


def test_the_lab_s_real_logs_hold_only_real_secrets() -> None:
    """The fixtures' engine logs: the only findings are the api keys two wild logs
    really passed to vLLM."""
    logs = [*FIXTURES.rglob("*.log"), *(SHARED.rglob("*.log") if SHARED.is_dir() else [])]
    found = [(f.file, f.why) for log in sorted(logs)
             for f in findings(log.read_text(errors="replace"), log.name)]
    assert {why for _, why in found} <= {"api_key is a secret's name",
                                         "--api-key is a secret's option"}


@pytest.mark.parametrize("env_line", [
    f'HF_TOKEN = "{HF}"', f'PIP_INDEX_URL = "https://bob:{PASSWORD}@pypi.example.org/simple"',
    'HF_TOKEN = "${HF_TOKEN}"',
])
def test_a_recipe_holding_a_secret_is_refused_naming_the_line(cli, tmp_path, env_line) -> None:
    shutil.copytree(ROOT / "recipes" / "suites", tmp_path / "suites")
    text = (ROOT / "recipes" / "tiny-bf16-kv.toml").read_text()
    recipe = tmp_path / "leaky.toml"
    recipe.write_text(text.replace("[hardware]", f"[engine.env]\n{env_line}\n\n[hardware]"))
    line = recipe.read_text().splitlines().index(env_line) + 1
    r = cli("recipe", "validate", recipe)
    assert r.exit_code == ExitCode.INVALID_INPUT
    assert f"leaky.toml:{line}: holds a secret" in r.stderr and not leaked(r.stderr)
    r = cli("run", recipe, "--dry-run", "--json", "--models", tmp_path)
    assert r.exit_code == ExitCode.INVALID_INPUT and not leaked(r.stdout + r.stderr)


def test_a_run_folder_is_sealed_redacted_and_says_so(cli, store_home, make_run,
                                                     seal_run_dir) -> None:
    from registry.formats.record import Source
    from registry.formats.rundir import LaunchPlan

    run = make_run("leaky", log=NONDEFAULT)
    (run / "outputs").mkdir(exist_ok=True)
    (run / "outputs" / "env.txt").write_text(ENV_DUMP)
    plan = LaunchPlan(platform="cpu", argv=["vllm", "--api-key", API_KEY],
                      env={"HF_TOKEN": HF, "VLLM_CPU_KVCACHE_SPACE": "4"}, cwd="/", port=1)
    (run / "launch.json").write_text(plan.model_dump_json(by_alias=True))
    remote = Source(role="recipe", path="lab", remote=f"https://bob:{PASSWORD}@example.org/l.git")
    sealed = seal_run_dir(run, sources=[remote])
    assert not leaked(stored_bytes(store_home))
    statement = json.loads((folder_at(store_home.ledger, sealed.id) / "statement.json")
                           .read_bytes())
    said = {(r["file"], r["line"], r["why"]) for r in statement["predicate"]["redactions"]}
    assert ("server.log", 1, "api_key is a secret's name") in said
    assert ("outputs/env.txt", 2, "HF_TOKEN is a secret's name") in said
    assert ("outputs/env.txt", 3, "OPENAI_API_KEY is a secret's name") in said
    assert ("predicate.environment.variables.HF_TOKEN", 0, "HF_TOKEN is a secret's name") in said
    assert ("predicate.sources[0].remote", 0, "a password in a URL (user:password@)") in said
    assert statement["predicate"]["environment"]["variables"]["VLLM_CPU_KVCACHE_SPACE"] == "4"
    for view in (("show", sealed.id), ("show", sealed.id, "--json"), ("verify", sealed.id)):
        r = cli(*view)
        assert r.exit_code == 0, r.stderr
        assert not leaked(r.stdout + r.stderr)
    shown = " ".join(cli("show", sealed.id).stdout.split())  # wrapped to the terminal
    assert "secrets, before hashing:" in shown and "api_key is a secret's name" in shown
    site = run.parent / "site"
    r = cli("report", sealed.id, "--out", site, "--home", store_home.root)
    assert r.exit_code == 0, r.stderr
    pages = b"".join(p.read_bytes() for p in site.rglob("*") if p.is_file())
    assert b"non-default args" in pages and not leaked(pages)  # the log page, redacted


def test_a_private_key_in_a_run_folder_is_refused(store_home, make_run, seal_run_dir,
                                                  signing_keys) -> None:
    from registry.errors import Refused

    run = make_run("keyed")
    (run / "outputs").mkdir(exist_ok=True)
    shutil.copy(next(signing_keys.glob("*.pem")), run / "outputs" / "notes.txt")
    before = sorted(store_home.objects.rglob("*"))
    with pytest.raises(Refused, match=r"outputs/notes.txt:1: holds a private key"):
        seal_run_dir(run)
    assert sorted(store_home.objects.rglob("*")) == before


def test_an_engine_log_s_secret_never_shows_in_evidence(cli, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "laguna-b70-record/evidence/record-run", run)
    log = run / "server.log"
    log.write_text(NONDEFAULT + log.read_text())
    for args in (("--json",), ()):
        r = cli("resolve", run, "--recipe",
                ROOT / "recipes/laguna-s21-b70-exact-short-decode.toml", *args)
        assert r.exit_code == 0, r.stderr
        assert not leaked(r.stdout + r.stderr)


def test_bench_import_never_copies_the_signing_key(cli, store_home, tmp_path,
                                                   signing_keys) -> None:
    key = next(signing_keys.glob("*.pem"))
    out = tmp_path / "run"
    r = cli("bench-import", ROOT / "tests/data/vllm-bench/result.json", "--log", key,
            "--out", out)
    assert r.exit_code == ExitCode.REFUSED and f"{key}:1: holds a private key" in r.stderr
    assert not out.exists() or not any(out.iterdir())
    assert key.read_bytes() not in stored_bytes(store_home)


def test_bench_import_copies_a_log_redacted(cli, tmp_path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(NONDEFAULT + (ROOT / "tests/data/vllm-bench/server.log").read_text())
    r = cli("bench-import", ROOT / "tests/data/vllm-bench/result.json", "--log", log,
            "--out", tmp_path / "run")
    assert r.exit_code == 0, r.stderr
    copied = (tmp_path / "run" / "server.log").read_text()
    assert not leaked(copied) and f"'api_key': ['{REDACTED}']" in copied


def test_a_capsule_s_environment_dump_is_redacted(cli, store_home, tmp_path) -> None:
    capsule = tmp_path / "capsule"
    shutil.copytree(FIXTURES / "laguna-b70-record", capsule)
    for path in capsule.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (capsule / "evidence" / "record-run" / "env.txt").write_text(ENV_DUMP)
    r = cli("import", capsule, "--json")
    assert r.exit_code == 0, r.stderr
    [record] = json.loads(r.stdout)
    assert not leaked(stored_bytes(store_home)) and not leaked(r.stdout)
    folder = folder_at(store_home.ledger, record["record"]["id"])
    statement = json.loads((folder / "statement.json").read_bytes())
    files = {(x["file"], x["line"]) for x in statement["predicate"]["redactions"]}
    assert {("evidence/record-run/env.txt", 2), ("evidence/record-run/env.txt", 3)} <= files


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "HF_TOKEN=", "'api_key': ['", "--api-key ", "https://u:", "@h/", "hf_", "Q" * 31, "sk-",
    "Z" * 21, "max_num_batched_tokens=", "8192", "${HF_TOKEN}", "\n", " ", "'", '"', "]", ",",
    "AKIA", "IOSFODNN7EXAMPLE", "PASSWORD: ", "xoxb-", "1234567890",
]), max_size=30).map("".join))
def test_redacted_text_holds_no_secret_and_keeps_its_lines(text) -> None:
    shown, found = redact_text(text, "f")
    assert findings(shown, "f") == [] and shown.count("\n") == text.count("\n")
    assert all(1 <= f.line <= text.count("\n") + 1 for f in found)


def test_llama_server_lines_reach_evidence_redacted() -> None:
    from registry.engines.llamacpp.logs.lines import plain

    line = plain(3, f"0.00.001.000 I main: args: --api-key {API_KEY} --port 8080\n")
    assert line.text == f"main: args: --api-key {REDACTED} --port 8080"
