"""Attacks on a ledger by someone who can write to it, made the way an outsider would:
plain `git`, `sqlite3` and file edits, never the registry's own API. Each must be
refused or marked, and never turned into a clean state by `reindex`."""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from registry.base.canonical import canonical_bytes, sha256_hex
from registry.errors import ExitCode
from registry.store.ledger import folder_at, record_folder

pytestmark = pytest.mark.usefixtures("store_home")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=mallory",
                           "-c", "user.email=m@x", *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def raw_public(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)


def forge(statement: dict, key: Ed25519PrivateKey, claim: str | None = None) -> tuple[str, bytes,
                                                                                     bytes]:
    """(id, statement bytes, envelope bytes) of a statement signed by `key`, claiming
    key id `claim` (default: the key's real id), as anyone can write them."""
    import hashlib

    data = canonical_bytes(statement)
    keyid = claim or hashlib.sha256(raw_public(key)).hexdigest()
    kind = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(data), data)
    envelope = {"payload": b64(data), "payloadType": kind.decode(),
                "signatures": [{"keyid": keyid, "sig": b64(key.sign(pae))}]}
    return sha256_hex(data), data, canonical_bytes(envelope)


def doubled(home, rid: str) -> dict:
    """The genuine statement with its decode rate doubled."""
    statement = json.loads((folder_at(home.ledger, rid) / "statement.json").read_bytes())
    for suite in statement["predicate"]["results"]:
        for metric in suite["metrics"].values():
            metric["value"] *= 2
    return statement


def plant(home, rid: str, statement: bytes, envelope: bytes, message: str) -> None:
    folder = folder_at(home.ledger, rid)
    folder.mkdir(parents=True)
    (folder / "statement.json").write_bytes(statement)
    (folder / "envelope.json").write_bytes(envelope)
    git(home.ledger, "add", "-A")
    git(home.ledger, "commit", "-qm", message)


def verify_all(cli) -> tuple[int, str]:
    r = cli("verify", "--all", "--json")
    assert "Traceback" not in r.stderr
    return r.exit_code, r.stdout


@pytest.fixture
def genuine(make_run, seal_run_dir):
    return seal_run_dir(make_run("genuine"))


def test_a_key_committed_by_plain_git_trusts_nothing(cli, store_home, genuine) -> None:
    mallory = Ed25519PrivateKey.generate()
    pem = mallory.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
    # the old layout's trust file and a self-signed keyring version 2
    (store_home.ledger / "keys").mkdir()
    (store_home.ledger / "keys" / "mallory.pub").write_bytes(pem)
    ring = {"_type": "registry.keyring/v1", "version": 2, "threshold": 1,
            "keys": [{"public": pem.decode(), "roles": ["root", "signer"]}],
            "retired": [], "revoked": []}
    payload = canonical_bytes(ring)
    kind = b"application/vnd.registry.keyring+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)
    (store_home.ledger / "keyring" / "2.json").write_bytes(canonical_bytes(
        {"payload": b64(payload), "payloadType": kind.decode(),
         "signatures": [{"keyid": "m", "sig": b64(mallory.sign(pae))}]}))
    rid, statement, envelope = forge(doubled(store_home, genuine.id), mallory)
    plant(store_home, rid, statement, envelope, "a faster run")
    r = cli("reindex")  # what verify used to suggest
    assert r.exit_code == ExitCode.FAILED and "keyring" in r.stderr
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED and "keyring/2.json is signed by 0 of the roots" in out
    assert cli("teacher", "set", rid[:12], "--lane", "x").exit_code != 0
    assert cli("show", rid[:12]).exit_code != 0


def test_a_forgery_under_the_victims_key_id_is_never_shown_as_theirs(cli, store_home,
                                                                     genuine) -> None:
    mallory = Ed25519PrivateKey.generate()
    rid, statement, envelope = forge(doubled(store_home, genuine.id), mallory,
                                     claim=genuine.signer)
    plant(store_home, rid, statement, envelope, "re-run")
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED
    report = json.loads(out)
    forged = next(c for c in report["records"] if c["id"] == rid)
    assert forged.get("signer") is None and "no signature by a key this home trusts" in out
    assert any("is not signed" in p["detail"] for p in report["ledger"])
    shown = json.loads(cli("show", rid[:12], "--json").stdout)
    assert shown["check"]["trust"] == "untrusted" and shown["check"].get("signer") is None
    human = cli("show", rid[:12]).stdout
    assert "UNTRUSTED" in human and genuine.signer not in human
    assert cli("diff", genuine.id[:12], rid[:12]).exit_code == ExitCode.UNVERIFIABLE
    assert cli("check", rid[:12]).exit_code == ExitCode.UNVERIFIABLE


def test_a_deleted_record_stays_deleted_through_reindex(cli, store_home, genuine) -> None:
    assert verify_all(cli)[0] == 0  # the home remembers this head
    git(store_home.ledger, "rm", "-rq", record_folder(genuine.id))
    git(store_home.ledger, "commit", "-qm", "tidy up")
    r = cli("reindex")
    assert r.exit_code == ExitCode.FAILED and "deleted by commit" in r.stderr
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED and "deleted by commit" in out


def test_a_rewritten_history_is_reported_as_rewritten(cli, store_home, make_run,
                                                      seal_run_dir, genuine) -> None:
    second = seal_run_dir(make_run("second"))
    assert verify_all(cli)[0] == 0
    git(store_home.ledger, "reset", "-q", "--hard", "HEAD~1")  # drop the second record
    r = cli("reindex")
    assert r.exit_code == ExitCode.FAILED and "rewritten" in r.stderr
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED and "does not descend from" in out
    assert second.id in out  # the index still names it: gone from the ledger


def test_an_evil_merge_is_refused_without_a_traceback(cli, store_home, genuine) -> None:
    mallory = Ed25519PrivateKey.generate()
    git(store_home.ledger, "checkout", "-qb", "side")
    rid, statement, envelope = forge(doubled(store_home, genuine.id), mallory)
    plant(store_home, rid, statement, envelope, "side record")
    git(store_home.ledger, "checkout", "-q", "main")
    (folder_at(store_home.ledger, genuine.id) / "envelope.json").write_bytes(envelope)
    git(store_home.ledger, "add", "-A")
    git(store_home.ledger, "commit", "-qm", "re-sign")
    git(store_home.ledger, "merge", "-q", "--no-edit", "side")
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED and "merge commit" in out and "changed by commit" in out
    r = cli("reindex")
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr


def edit_index(home, database_url: str | None, *statements: str) -> None:
    """Plain SQL on the index, as anyone with the database's password can run it."""
    if database_url is None:
        db = sqlite3.connect(home.root / "index.sqlite")
    else:
        import psycopg

        db = psycopg.connect(database_url.replace("+psycopg", ""))
    for sql in statements:
        db.execute(sql)
    db.commit()
    db.close()


def test_an_edited_index_row_is_caught_and_never_shown(cli, store_home, genuine,
                                                       database_url) -> None:
    edit_index(store_home, database_url,
               "UPDATE records SET decode_tok_s = decode_tok_s * 2, kv_cache = 'fp8_e4m3'",
               "UPDATE identity SET value = 'fp8_e4m3' WHERE name = 'precision.kv_cache'")
    signed = json.loads(cli("show", genuine.id[:12], "--json").stdout)
    code, out = verify_all(cli)
    assert code == ExitCode.FAILED and "records.decode_tok_s" in out and "identity.value" in out
    [row] = json.loads(cli("list", "--json").stdout)
    assert row["kv_cache"] == "bfloat16" and "the index differed" in row["trust_detail"]
    medians = [m["value"] for s in signed["statement"]["predicate"]["results"]
               for name, m in s["metrics"].items() if name == "decode_tok_s.median"]
    assert row["decode_tok_s"] == medians[0]
    assert cli("reindex").exit_code == 0 and verify_all(cli)[0] == 0


def test_a_symlinked_secret_in_a_run_directory_is_refused(cli, store_home, make_run,
                                                          signing_keys) -> None:
    run = make_run("leaky")
    secret = next(signing_keys.glob("*.pem"))
    (run / "outputs" / "notes.txt").symlink_to(secret)
    before = sorted(store_home.objects.rglob("*"))
    r = cli("seal", run, "--recipe", Path(__file__).parent.parent / "recipes/tiny-bf16-kv.toml")
    assert r.exit_code == ExitCode.INVALID_INPUT and "notes.txt" in r.stderr
    assert "symbolic link out of" in r.stderr
    assert sorted(store_home.objects.rglob("*")) == before


def test_a_launcher_that_is_the_signing_key_is_hashed_not_stored(store_home, make_run,
                                                                 seal_run_dir,
                                                                 signing_keys) -> None:
    from registry.formats.rundir import LaunchPlan

    secret = next(signing_keys.glob("*.pem"))
    run = make_run("launched")
    plan = LaunchPlan(platform="cpu", argv=["vllm"], env={}, cwd="/", port=1,
                      launcher=str(secret))
    (run / "launch.json").write_text(plan.model_dump_json(by_alias=True))
    from registry.seal import capture_sources

    sources, files = capture_sources(run, None, None, store_home)
    sealed = seal_run_dir(run, sources=sources, extra=files)
    statement = json.loads((folder_at(store_home.ledger, sealed.id) / "statement.json")
                           .read_bytes())
    launcher = next(s for s in statement["predicate"]["sources"] if s["role"] == "launcher")
    key = secret.read_bytes()
    assert launcher["sha256"] == sha256_hex(key) and "not copied" in launcher["note"]
    assert not any(p.is_file() and p.read_bytes() == key for p in store_home.objects.rglob("*"))


def test_a_record_path_cannot_leave_its_folder(tmp_path) -> None:
    from registry.base.confine import inside
    from registry.errors import InvalidInput

    assert inside(tmp_path, "suites/a.jsonl") == (tmp_path / "suites/a.jsonl").resolve()
    for hostile in ("../../../tmp/pwned", "/etc/passwd", "a/../../b", "."):
        with pytest.raises(InvalidInput, match="must stay inside"):
            inside(tmp_path, hostile)


def test_a_hook_planted_in_a_shared_ledger_never_runs(cli, store_home, make_run,
                                                      seal_run_dir, tmp_path) -> None:
    marker = tmp_path / "pwned"
    hook = f"#!/bin/sh\necho ran >> {marker}\n"
    hooks = store_home.ledger / ".git" / "hooks"
    for name in ("pre-commit", "post-commit", "reference-transaction", "post-index-change"):
        (hooks / name).write_text(hook)
        (hooks / name).chmod(0o755)
    (tmp_path / "monitor").write_text(hook)
    (tmp_path / "monitor").chmod(0o755)
    git(store_home.ledger, "config", "core.fsmonitor", str(tmp_path / "monitor"))
    git(store_home.ledger, "config", "filter.evil.clean", f"sh -c 'echo ran >> {marker}; cat'")
    (store_home.ledger / ".gitattributes").write_text("* filter=evil\n")
    seal_run_dir(make_run("hooked"))
    cli("verify", "--all")
    cli("reindex")
    assert not marker.exists()  # nothing the ledger's writer planted ran


def test_markup_in_a_key_id_is_printed_not_interpreted(cli, store_home, genuine) -> None:
    path = folder_at(store_home.ledger, genuine.id) / "envelope.json"
    envelope = json.loads(path.read_bytes())
    envelope["signatures"][0]["keyid"] = "[/red][bold]"
    path.write_bytes(canonical_bytes(envelope))
    git(store_home.ledger, "commit", "-qam", "markup")
    r = cli("verify", "--all")
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr


def test_repeated_seals_of_one_run_do_not_grow_the_store(store_home, make_run,
                                                        seal_run_dir) -> None:
    run = make_run("again")

    def size() -> int:
        return sum(p.stat().st_size for p in store_home.objects.rglob("*") if p.is_file())

    seal_run_dir(run)
    first = size()
    for _ in range(4):
        seal_run_dir(run)
    assert size() == first  # same artifacts, same objects: nothing captured grows
