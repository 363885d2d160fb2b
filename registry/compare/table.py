"""`registry compare`: chosen identity axes and metrics as columns across any number of
records, filtered with typed conditions and sorted.

Each record is read from the ledger through `sealed_statement` (what every reader
uses), so a record that no longer hashes to its id is refused, never shown. A column
is a record column (`id`, `sealed`, `lane`, ...), an identity field (`precision.kv_cache`)
or a metric (`decode_tok_s.median`, or `SUITE:METRIC` to pick the suite).
"""

import operator
import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.formats.display import record_quality
from registry.formats.figures import HEADLINE, headline
from registry.formats.identity import FIELDS
from registry.formats.record import Statement
from registry.formats.unproven import mark
from registry.store.home import Home

DEFAULT_COLUMNS = ("id", "lane", "precision.weights", "precision.kv_cache", "parallel.tensor",
                   HEADLINE, "quality")
# `quality`: the record's measurement quality (valid | degraded | not judged), as
# registry.formats.figures.headline gives it beside the headline figure
RECORD_COLUMNS = ("id", "sealed", "lane", "recipe", "parent", "imported", "state", "quality")
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "!=": operator.ne, "<=": operator.le, ">=": operator.ge,
    "=": operator.eq, "<": operator.lt, ">": operator.gt,
}
_TERM = re.compile(r"^\s*([^!<>=\s]+)\s*(!=|<=|>=|=|<|>)\s*(.*?)\s*$")
Value = str | int | float | bool | None


class Condition(Frozen):
    name: str
    op: str
    value: str

    def holds(self, actual: Value) -> bool:
        """Typed: numbers compare as numbers, yes/no as booleans, the rest as text.
        A record without the value matches only `!=`."""
        if actual is None:
            return self.op == "!="
        wanted = typed(self.value, like=actual, term=str(self))
        if isinstance(actual, bool) and self.op not in ("=", "!="):
            raise InvalidInput(f"--where {self}: {self.name} is yes/no; use = or !=")
        return OPERATORS[self.op](actual, wanted)

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.value}"


def parse_condition(term: str) -> Condition:
    m = _TERM.match(term)
    if not m:
        raise InvalidInput(f"--where {term!r}: expected FIELD=VALUE, or FIELD OP VALUE with OP "
                           "one of != < <= > >=", hint="e.g. --where 'decode_tok_s.median>=300'")
    return Condition(name=m[1], op=m[2], value=m[3])


def typed(text: str, *, like: Value, term: str) -> Value:
    """`text` read as the type of the value it is compared with."""
    if isinstance(like, bool):
        if text.lower() in ("yes", "true", "1"):
            return True
        if text.lower() in ("no", "false", "0"):
            return False
        raise InvalidInput(f"--where {term}: expected yes or no")
    if isinstance(like, int | float):
        try:
            return float(text)
        except ValueError:
            raise InvalidInput(f"--where {term}: {text!r} is not a number") from None
    return text


class Comparison(Frozen):
    columns: list[str]
    rows: list[list[Value]]
    unproven: dict[str, str] = Field(
        default_factory=dict, description="record id -> why its evidence proves nothing "
                                          "(every view marks such a record UNPROVEN)")


def record_value(rid: str, statement: Statement, name: str) -> Value:
    """The value of column `name` for one record (None when it has none)."""
    p = statement.predicate
    recipe = p.recipe or {}
    record = {"id": rid, "sealed": p.run.sealed_at, "lane": recipe.get("lane"),
              "recipe": recipe.get("name"), "parent": p.parent,
              "imported": p.imported is not None, "state": p.run.state,
              "quality": record_quality(headline(p.results).quality, p.imported is not None)}
    if name in record:
        return record[name]
    if name in p.identity.fields:
        return _scalar(p.identity.value(name))
    suite, _, metric = name.rpartition(":")
    for s in p.results:
        if (not suite or s.suite == suite) and metric in s.metrics:
            return s.metrics[metric].value
    return None


def _scalar(value: Any) -> Value:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def known_column(statements: Sequence[Statement], name: str) -> bool:
    _, _, metric = name.rpartition(":")
    # the headline figure is a column of every record: empty where none has measured it
    return name in RECORD_COLUMNS or name in FIELDS or name == HEADLINE or any(
        name in s.predicate.identity.fields or any(metric in r.metrics for r in s.predicate.results)
        for s in statements)


def compare(home: Home, ids: Sequence[str] = (), where: Sequence[str] = (),
            columns: Sequence[str] = DEFAULT_COLUMNS, sort: str | None = None) -> Comparison:
    """Records `ids` (else every indexed record), filtered, as a table of `columns`."""
    conditions = [parse_condition(t) for t in where]
    records = load(home, ids)
    statements = [s for _, s in records]
    for name in [*columns, *(c.name for c in conditions), *([sort.lstrip("-")] if sort else [])]:
        if records and not known_column(statements, name):
            raise InvalidInput(f"unknown column {name!r}",
                               hint="a record column (" + ", ".join(RECORD_COLUMNS) + "), an "
                                    "identity field (precision.kv_cache) or a metric "
                                    "(decode_tok_s.median, or SUITE:METRIC)")
    kept = [(rid, s) for rid, s in records
            if all(c.holds(record_value(rid, s, c.name)) for c in conditions)]
    rows = [[record_value(rid, s, c) for c in columns] for rid, s in kept]
    if sort:
        rows = sort_rows(rows, list(columns), sort)
    unproven = {rid: why for rid, s in kept
                if (why := mark(s.predicate.unproven, s.predicate.identity))}
    return Comparison(columns=list(columns), rows=rows, unproven=unproven)


def sort_rows(rows: list[list[Value]], columns: list[str], sort: str) -> list[list[Value]]:
    """By one column (`-NAME` descending); records without the value last either way."""
    name = sort.lstrip("-")
    if name not in columns:
        raise InvalidInput(f"--sort {name}: not one of the columns", hint="add it to --columns")
    i = columns.index(name)
    present = [r for r in rows if r[i] is not None]
    missing = [r for r in rows if r[i] is None]
    present.sort(key=lambda r: (isinstance(r[i], str), r[i]), reverse=sort.startswith("-"))
    return present + missing


def split_where(terms: Sequence[str]) -> tuple[list[str], list[Condition]]:
    """`FIELD=VALUE` terms the index answers as they are, and the typed rest."""
    conditions = [parse_condition(t) for t in terms]
    return ([str(c) for c in conditions if c.op == "="],
            [c for c in conditions if c.op != "="])


def filter_ids(home: Home, ids: Sequence[str], conditions: Sequence[Condition]) -> list[str]:
    """The ids, in order, whose records meet every typed condition."""
    if not conditions:
        return list(ids)
    return [rid for rid, s in load(home, ids)
            if all(c.holds(record_value(rid, s, c.name)) for c in conditions)]


def load(home: Home, ids: Sequence[str]) -> list[tuple[str, Statement]]:
    from registry.store.ledger import committed_ids
    from registry.store.query import find_records, sealed_statement

    refs = list(ids) or [r.id for r in find_records(home)]
    committed = committed_ids(home.ledger)  # listed once, not once per record
    return [sealed_statement(home, ref, committed) for ref in dict.fromkeys(refs)]
