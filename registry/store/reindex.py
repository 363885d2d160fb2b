"""Rebuild the index from the ledger alone (`registry reindex`).

Every committed record is indexed with the commit that added it; a record whose
statement does not hash to its id, or does not parse, is skipped and reported
(`registry verify` names what is wrong with it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from registry.errors import RegistryError
from registry.record import parse_statement, record_id
from registry.store import dsse
from registry.store.home import Home
from registry.store.index import entry_rows, open_index
from registry.store.ledger import ENVELOPE, RECORDS, STATEMENT, Ledger
from registry.store.lock import exclusive


class ReindexReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    indexed: int
    skipped: dict[str, str]  # record id -> why


def reindex(home: Home) -> ReindexReport:
    index = open_index(home)
    with exclusive(home.lock_file):
        ledger = Ledger(home.ledger)
        ledger.recover()
        tree = ledger.tree_files(RECORDS)
        added = {rid: next((e.commit for e in events if e.status == "A"), None)
                 for rid, events in ledger.history().items()}
        entries, skipped = [], {}
        for rid in ledger.record_ids():
            try:
                data = ledger.blob(tree[f"{RECORDS}/{rid}/{STATEMENT}"])
                if record_id(data) != rid:
                    raise RegistryError("statement does not hash to the record id")
                rows = entry_rows(rid, parse_statement(data), _signer(ledger, tree, rid))
            except (RegistryError, KeyError) as e:
                skipped[rid] = str(e)
                continue
            rows["records"][0]["ledger_commit"] = added[rid]
            entries.append(rows)
        index.rebuild(entries)
    from registry.contracts.bindings import index_teachers  # teachers live in the ledger too

    index_teachers(home)
    return ReindexReport(indexed=len(entries), skipped=skipped)


def _signer(ledger: Ledger, tree: dict[str, str], rid: str) -> str | None:
    sha = tree.get(f"{RECORDS}/{rid}/{ENVELOPE}")
    if sha is None:
        return None
    try:
        return dsse.parse_envelope(ledger.blob(sha)).signatures[0].keyid
    except RegistryError:
        return None
