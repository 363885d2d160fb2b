"""The ledger's layout: new records in their shard (`records/<ab>/<id>/`), records of a
ledger from before shards (`records/<id>/`) read everywhere beside them, and a record
in another id's shard refused by the history check (docs/formats.md)."""

from __future__ import annotations

import json

import pytest

from registry.errors import ExitCode
from registry.formats.record import record_id
from registry.signing import dsse
from registry.signing.keys import signing_key
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, Ledger, committed_ids
from registry.store.reindex import reindex
from registry.store.transaction import transaction


def commit_at(home, folder_of, statement: bytes) -> str:
    """Commit `statement` (signed by the home's key) in the folder `folder_of(id)` names,
    as a registry that wrote there would; its id."""
    rid = record_id(statement)
    envelope = dsse.envelope_bytes(dsse.sign(statement, *signing_key()))
    folder = folder_of(rid)
    with transaction(home):
        Ledger(home.ledger).commit({f"{folder}/{STATEMENT}": statement,
                                    f"{folder}/{ENVELOPE}": envelope}, rid, signing_key())
    return rid


def another(statement: bytes, mark: str) -> bytes:
    """The same statement sealed at another moment: another record."""
    return statement.replace(b'"sealed_at":"', f'"sealed_at":"{mark}'.encode(), 1)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_ledger_from_before_shards_reads_beside_new_records(cli, store_home, make_run,
                                                             seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    ledger = Ledger(store_home.ledger)
    assert ledger.record_dir(sealed.id) == store_home.ledger / RECORDS / sealed.id[:2] / sealed.id
    statement = (ledger.record_dir(sealed.id) / STATEMENT).read_bytes()
    flat = commit_at(store_home, lambda rid: f"{RECORDS}/{rid}", another(statement, "1"))
    assert (store_home.ledger / RECORDS / flat / STATEMENT).is_file()
    reindex(store_home)
    assert set(committed_ids(store_home.ledger)) == {sealed.id, flat}
    assert committed_ids(store_home.ledger, flat[:12]) == [flat]
    r = cli("verify", "--all", "--json")
    report = json.loads(r.stdout)
    assert r.exit_code == 0 and not report["ledger"], r.stdout
    assert {c["id"] for c in report["records"] if c["verified"]} == {sealed.id, flat}
    shown = json.loads(cli("show", flat[:12], "--json").stdout)
    assert shown["check"]["trust"] == "verified"
    listed = json.loads(cli("list", "--json").stdout)
    assert {r["id"]: r["trust"] for r in listed} == {sealed.id: "verified", flat: "verified"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_record_in_another_ids_shard_is_not_a_ledger_file(cli, store_home, make_run,
                                                            seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    statement = (Ledger(store_home.ledger).record_dir(sealed.id) / STATEMENT).read_bytes()
    wrong = commit_at(store_home, lambda rid: f"{RECORDS}/00/{rid}" if rid[:2] != "00"
                      else f"{RECORDS}/ff/{rid}", another(statement, "2"))
    r = cli("verify", "--all", "--json")
    report = json.loads(r.stdout)
    assert r.exit_code == ExitCode.FAILED
    assert any("not a ledger file" in p["detail"] and wrong in p["detail"]
               for p in report["ledger"]), report["ledger"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_record_added_in_both_places_is_added_twice(cli, store_home, make_run,
                                                      seal_run_dir) -> None:
    sealed = seal_run_dir(make_run())
    statement = (Ledger(store_home.ledger).record_dir(sealed.id) / STATEMENT).read_bytes()
    commit_at(store_home, lambda rid: f"{RECORDS}/{rid}", statement)  # again, flat
    report = json.loads(cli("verify", "--all", "--json").stdout)
    assert any("added twice" in p["detail"] for p in report["ledger"]), report["ledger"]
