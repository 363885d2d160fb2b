"""`registry verify`: each kind of tampering fails with exit 1 naming the part; what
cannot be checked (missing object, unknown key, unindexed record) exits 3."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from registry.errors import ExitCode
from registry.signing import dsse
from registry.signing.keys import create_key, signing_key
from registry.store.ledger import folder_at, record_folder
from registry.store.objects import ObjectStore


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    """Change one byte of a file (objects are read-only: make it writable first)."""
    path.chmod(0o644)
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= mask
    path.write_bytes(bytes(data))


def verify(cli, *args: str) -> tuple[int, list[dict]]:
    """Exit code and the record checks; problems with the history as a whole come as a
    last pseudo-record with id "ledger"."""
    r = cli("verify", *args, "--json")
    assert "Traceback" not in r.stderr
    if not r.stdout:
        return r.exit_code, []
    report = json.loads(r.stdout)
    ledger = [{"id": "ledger", "problems": report["ledger"]}] if report["ledger"] else []
    return r.exit_code, report["records"] + ledger


def parts(records: list[dict]) -> set[str]:
    return {p["part"] for rec in records for p in rec["problems"]}


@pytest.fixture
def sealed(store_home, make_run, seal_run_dir):
    return seal_run_dir(make_run())


def record_file(home, sealed, name: str) -> Path:
    return folder_at(home.ledger, sealed.id) / name


def test_a_fresh_record_verifies(cli, sealed) -> None:
    code, records = verify(cli, sealed.id[:8])
    assert code == 0 and records[0]["verified"] and records[0]["artifacts"] == 5
    assert records[0]["signer"] == sealed.signer
    r = cli("verify", "--all")
    assert r.exit_code == 0 and "1/1 records verified" in r.stdout and "history ok" in r.stdout


def test_one_byte_of_an_artifact(cli, store_home, sealed) -> None:
    statement = json.loads(record_file(store_home, sealed, "statement.json").read_bytes())
    log = next(s for s in statement["subject"] if s["name"] == "server.log")
    flip(ObjectStore(store_home.objects).path(log["digest"]["sha256"]), 3)
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"artifact server.log"}


def test_one_byte_of_the_statement(cli, store_home, sealed) -> None:
    flip(record_file(store_home, sealed, "statement.json"), 100)
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"statement"}
    details = " ".join(p["detail"] for p in records[0]["problems"])
    assert "differs from its ledger commit" in details


def test_one_byte_of_the_envelope(cli, store_home, sealed) -> None:
    flip(record_file(store_home, sealed, "envelope.json"), 40)
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"envelope"}


def test_a_signature_by_another_key_under_the_trusted_id(cli, store_home, sealed, tmp_path) -> None:
    create_key(tmp_path / "mallory")
    _, mallory = signing_key(tmp_path / "mallory")
    statement = record_file(store_home, sealed, "statement.json").read_bytes()
    forged = dsse.sign(statement, sealed.signer, mallory)  # claims the trusted key id
    record_file(store_home, sealed, "envelope.json").write_bytes(dsse.envelope_bytes(forged))
    repo = git.Repo(store_home.ledger)
    repo.git.commit("-qam", "re-sign")
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"signature", "ledger"}
    assert "no signature by a key this home trusts" in json.dumps(records)
    assert "is not signed" in json.dumps(records)  # the plain git commit


def test_rewriting_the_ledger_commit(cli, store_home, sealed) -> None:
    repo = git.Repo(store_home.ledger)
    repo.git.commit("--amend", "-qm", f"{sealed.id}\n\nsame files, rewritten history")
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"ledger", "index"}
    assert "rewritten" in json.dumps(records)


def test_a_later_commit_changing_the_statement(cli, store_home, sealed) -> None:
    flip(record_file(store_home, sealed, "statement.json"), 200)
    git.Repo(store_home.ledger).git.commit("-qam", "fix a typo")
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.FAILED and parts(records) == {"statement", "ledger"}
    assert "changed by commit" in json.dumps(records)


def test_a_deleted_record_is_reported_by_verify_all(cli, store_home, sealed) -> None:
    repo = git.Repo(store_home.ledger)
    repo.git.rm("-rq", record_folder(sealed.id))
    repo.git.commit("-qm", "remove")
    code, records = verify(cli, "--all")
    assert code == ExitCode.FAILED and records[0]["id"] == sealed.id
    assert "not in the ledger" in records[0]["problems"][0]["detail"]
    assert "deleted by commit" in json.dumps(records[-1])


def test_a_missing_object_cannot_be_verified(cli, store_home, sealed) -> None:
    statement = json.loads(record_file(store_home, sealed, "statement.json").read_bytes())
    bench = next(s for s in statement["subject"] if s["name"] == "bench.json")
    ObjectStore(store_home.objects).path(bench["digest"]["sha256"]).unlink()
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.UNVERIFIABLE and parts(records) == {"artifact bench.json"}


def test_an_unindexed_record_cannot_have_its_commit_checked(cli, store_home, sealed) -> None:
    from registry.store.index import open_index

    open_index(store_home).drop(sealed.id)
    code, records = verify(cli, sealed.id)
    assert code == ExitCode.UNVERIFIABLE and parts(records) == {"index"}
    assert cli("reindex").exit_code == 0
    assert verify(cli, sealed.id)[0] == 0


def test_wrong_beats_unverifiable(cli, store_home, make_run, seal_run_dir) -> None:
    a = seal_run_dir(make_run("a"))
    b = seal_run_dir(make_run("b"))
    flip(record_file(store_home, a, "statement.json"), 10)
    from registry.store.index import open_index

    open_index(store_home).drop(b.id)
    code, records = verify(cli, "--all")
    assert code == ExitCode.FAILED and len(records) == 2


def test_usage_and_unknown_ids(cli, sealed) -> None:
    assert cli("verify").exit_code == ExitCode.USAGE
    assert cli("verify", sealed.id, "--all").exit_code == ExitCode.USAGE
    r = cli("verify", "f" * 64)
    assert r.exit_code == ExitCode.NOT_FOUND and "no record" in r.stderr


def test_human_output_names_the_part(cli, store_home, sealed) -> None:
    flip(record_file(store_home, sealed, "envelope.json"), 5)
    r = cli("verify", sealed.id[:12])
    assert r.exit_code == 1 and "FAILED" in r.stdout and "envelope:" in r.stdout


def test_a_whole_number_float_in_the_identity_verifies(cli, store_home, make_run,
                                                        seal_run_dir) -> None:
    """Canonical JSON writes 2.0 as `2`: the index row must be what the signed bytes say
    when read back (the real engine reports e.g. kv_usage_peak 0.0)."""
    from registry.formats.identity import Evidence, ResolvedField, Status
    from tests.conftest import resolved_identity

    identity = resolved_identity()
    peak = ResolvedField(declared=None, resolved=0.0, status=Status.undeclared, rule="test",
                         evidence=[Evidence(source="server.log", line=1, text="...")])
    identity = identity.model_copy(update={"fields": {**identity.fields,
                                                      "kv_usage_peak": peak}})
    sealed = seal_run_dir(make_run(), identity=identity)
    code, records = verify(cli, sealed.id)
    assert code == 0, records


def test_worker_processes_report_exactly_what_one_process_does(
        cli, store_home, make_run, seal_run_dir, monkeypatch, tmp_path) -> None:
    """`verify --all` over many records splits the checks over forked processes: the
    report (order, problems, signers) must be the one a single process gives."""
    import os

    from registry.base import parallel
    from registry.store import verify as verify_module

    runs = [seal_run_dir(make_run(name)) for name in "abcd"]
    flip(record_file(store_home, runs[1], "statement.json"), 10)
    statement = json.loads(record_file(store_home, runs[2], "statement.json").read_bytes())
    flip(ObjectStore(store_home.objects).path(statement["subject"][0]["digest"]["sha256"]), 0)
    _, alone = verify(cli, "--all")
    parent, marks = os.getpid(), tmp_path / "workers"
    marks.mkdir()
    original = verify_module._check

    def in_a_worker(ctx, rid: str):
        (marks / str(os.getpid())).write_text(str(os.getpid() != parent))
        return original(ctx, rid)

    monkeypatch.setattr(parallel, "MIN_ITEMS", 1)
    monkeypatch.setattr(parallel, "workers", lambda: 2)
    monkeypatch.setattr(verify_module, "_check", in_a_worker)
    code, split = verify(cli, "--all")
    assert code == ExitCode.FAILED and split == alone
    assert len(list(marks.iterdir())) == 2
    assert all(m.read_text() == "True" for m in marks.iterdir())
    assert {"statement", f"artifact {statement['subject'][0]['name']}"} <= parts(split)
