"""The index's table and column names, written from its SQLModel tables
(registry/store/index.py) by tools/index_tables.py: do not edit. Readers of a SQLite
index query it through sqlite3 with these names (registry/store/sqlite_read.py)."""

COLUMNS: dict[str, tuple[str, ...]] = {
    "records": (
        "id", "created_at", "lane", "recipe", "parent", "imported", "signer", "summary",
        "model", "weights", "kv_cache", "decode_tok_s", "decode_ci_low",
        "decode_ci_high", "quality", "ledger_commit",
    ),
    "identity": (
        "record_id", "name", "value", "status",
    ),
    "results": (
        "record_id", "suite", "metric", "value", "unit", "formula", "count",
    ),
}
"""table -> its columns, in the order of the definition."""
