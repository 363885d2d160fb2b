"""An index entry: the rows one record gives each table of the index, derived from its
signed statement as every reader and writer derives them, and what an indexed entry
says that the statement does not.

Kept apart from the SQLModel tables (registry/store/index.py) so that readers need no
SQLAlchemy.
"""

import json
from typing import Any, Literal

from registry.base.model import Frozen
from registry.errors import InvalidInput, NotFound
from registry.formats.figures import Headline, headline, record_headline
from registry.formats.record import Statement, summary_line
from registry.signing.signed import Trust

COLUMNS = ("id", "lane", "recipe", "parent", "imported", "signer", "model", "weights", "kv_cache",
           "quality")


class RecordRow(Frozen):
    id: str
    created_at: str
    lane: str | None
    recipe: str | None
    parent: str | None
    imported: bool
    signer: str | None
    summary: str
    model: str | None
    weights: str | None
    kv_cache: str | None
    decode_tok_s: float | None
    decode_ci_low: float | None = None
    decode_ci_high: float | None = None
    quality: str | None = None  # measurement: valid | degraded | not judged
    ledger_commit: str | None
    trust: Trust | None = None  # set by the reader that checked the signed statement
    trust_detail: str | None = None
    headline: Headline | None = None  # set with `trust`: from the signed results
    failed_checks: tuple[str, ...] = ()  # set with `trust`: fields whose cross-check failed


def where_kind(name: str, value: str) -> Literal["imported", "column", "identity"]:
    """What a `--where NAME=VALUE` term filters on; an unknown name is refused."""
    if name == "imported":
        return "imported"
    if name in COLUMNS:
        return "column"
    if "." in name:
        return "identity"
    raise InvalidInput(f"--where {name}={value}: unknown field",
                       hint="use an identity field (e.g. precision.kv_cache) or one of "
                            + ", ".join(COLUMNS))


def yes(value: str) -> bool:
    return value.lower() in ("1", "true", "yes")


def unreadable(url: str, why: str) -> NotFound:
    """An index that cannot be queried (no such table, no database), named without the
    credentials a database URL may hold."""
    return NotFound(f"index {url.split('@')[-1]}: {why.splitlines()[0]}",
                    hint="check REGISTRY_DATABASE_URL, or rebuild it: registry reindex")


def value_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


Rows = dict[str, list[dict[str, Any]]]  # table name -> rows


def entry_rows(record_id: str, statement: Statement, signer: str | None) -> Rows:
    """The rows of each table for one record."""
    p = statement.predicate
    v = p.identity.value
    top = headline(p.results)
    decode = top.metric
    record = {
        "id": record_id, "created_at": p.run.sealed_at, "lane": (p.recipe or {}).get("lane"),
        "recipe": (p.recipe or {}).get("name"), "parent": p.parent,
        "imported": p.imported is not None, "signer": signer, "summary": summary_line(p),
        "model": value_text(v("model.architecture")), "weights": value_text(v("precision.weights")),
        "kv_cache": value_text(v("precision.kv_cache")),
        "decode_tok_s": decode.value if decode else None,
        "decode_ci_low": decode.ci_low if decode else None,
        "decode_ci_high": decode.ci_high if decode else None, "quality": top.quality,
        "ledger_commit": None,
    }
    fields = [{"record_id": record_id, "name": name, "value": value_text(f.resolved),
               "status": f.status.value} for name, f in sorted(p.identity.fields.items())]
    metrics = [{"record_id": record_id, "suite": s.suite, "metric": m.name, "value": m.value,
                "unit": m.unit, "formula": m.formula, "count": m.count}
               for s in p.results for m in s.metrics.values()]
    return {"records": [record], "identity": fields, "results": metrics}


def signed_row(record_id: str, statement: Statement, signer: str | None,
               ledger_commit: str | None) -> RecordRow:
    """A record's row as its signed statement gives it, trusted (its signature checked)."""
    values = {**entry_rows(record_id, statement, signer)["records"][0],
              "ledger_commit": ledger_commit, **signed_extras(statement)}
    return RecordRow(**values, trust=Trust.verified)


def signed_extras(statement: Statement) -> dict[str, Any]:
    """What a shown row carries beyond the index's columns, from the signed statement: the
    headline figure and the fields whose cross-check failed."""
    from registry.formats.identity import failed_check

    p = statement.predicate
    return {"headline": record_headline(p.results, p.imported is not None),
            "failed_checks": tuple(sorted(n for n, f in p.identity.fields.items()
                                          if failed_check(f)))}


def entry_differences(indexed: Rows | None, signed: Rows) -> list[str]:
    """What an index entry says that the signed statement does not (table.column),
    the ledger commit and the summary aside (history decides the one; the other is the
    display line a view writes from the statement, formats/display.py, and a newer
    registry may write it otherwise)."""
    if indexed is None:
        return ["missing"]
    found = []
    keys = {"records": ("id",), "identity": ("name",), "results": ("suite", "metric")}
    for table, key in keys.items():
        ours = {tuple(r[k] for k in key): r for r in indexed.get(table, [])}
        theirs = {tuple(r[k] for k in key): r for r in signed[table]}
        if ours.keys() != theirs.keys():
            found.append(f"{table} rows")
            continue
        for k, row in theirs.items():
            found += [f"{table}.{c}" for c, v in row.items()
                      if c not in ("ledger_commit", "summary") and ours[k].get(c) != v]
    return sorted(set(found))
