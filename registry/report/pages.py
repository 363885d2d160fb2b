"""The report's pages: index, record, diff, lane history and log. Each function takes
loaded, typed data and returns one HTML document; links between pages are relative
paths built by `Paths`, so every link a page holds points at a page the site writes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from registry.compare.diff import Diff
from registry.formats.display import (
    NOT_JUDGED,
    identity,
    metric_label,
    number,
    record_quality,
    short_id,
    verdict_word,
    when,
)
from registry.formats.figures import Metric
from registry.formats.identity import PRECISION_AXES, Evidence, failed_check
from registry.formats.unproven import mark
from registry.formats.verdict import Verdict
from registry.measure.display import headline_text
from registry.measure.metrics import formula_text
from registry.report import charts
from registry.report.html import (
    Html,
    chart,
    data_script,
    esc,
    link,
    page,
    plain,
    section,
    short,
    status,
    table,
)
from registry.report.load import RecordData, Skipped

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
BASE_METRIC = {"name", "value", "unit", "formula", "count"}


@dataclass(frozen=True)
class Paths:
    """Where each page lives, relative to the site root; one place decides them."""

    def record(self, rid: str) -> str:
        return f"records/{rid}.html"

    def diff(self, a: str, b: str) -> str:
        return f"diffs/{short(a)}-{short(b)}.html"

    def lane(self, lane: str) -> str:
        import hashlib

        slug = lane if SAFE_NAME.match(lane) else hashlib.sha256(lane.encode()).hexdigest()[:16]
        return f"lanes/{slug}.html"

    def log(self, sha256: str) -> str:
        return f"logs/{sha256}.html"


PATHS = Paths()


def _up(path: str) -> str:
    return "../" + path  # every page but the index sits one folder down


# ---- index ----

def index_page(records: Sequence[RecordData], skipped: Sequence[Skipped],
               lanes: Sequence[str], picked: Sequence[tuple[str, str]] = (),
               fleet: bool = False, claims: int = 0) -> str:
    rows = [[(r.row.created_at, Html(_pick(r) + link(PATHS.record(r.id), short(r.id)))),
             (r.row.created_at, when(r.row.created_at)),
             link(PATHS.lane(r.lane), r.lane) if r.lane else "-",
             r.row.model, _checked(r, "precision.weights"), _checked(r, "precision.kv_cache"),
             r.statement.predicate.identity.value("parallel.tensor"),
             _headline_cell(r), _quality_word(r), _verdict_word(r.verdict)] for r in records]
    body = [Html(f'<p><input type="search" placeholder="filter: words that must all appear" '
                 f'data-filters="records" data-count="shown" aria-label="filter records"> '
                 f'<span id="shown">{len(records)}</span> of {len(records)} records</p>'
                 '<p><button type="button" id="compare-picked" disabled>compare the chosen '
                 "records</button> (tick their boxes)</p>"),
            Html('<section id="picked" hidden><h2>chosen records, side by side</h2>'
                 '<div class="scroll" id="picked-table"></div></section>'),
            table(["id", "sealed", "lane", "model", "weights", "kv cache", "tp",
                   "tok/s", "quality", "verdict"], rows, cls="sortable",
                  attrs=' id="records"', kinds=["ident", "can-go", "ident", "can-go ident",
                                                "ident", "ident", "can-go", "", "", ""]),
            data_script("records-data", {r.id: side_by_side(r) for r in records})]
    points = [{"id": short(r.id), "lane": r.lane or "-", "kv": identity(r.row.kv_cache),
               "rate": r.headline.value, "quality": r.headline.quality or "",
               "low": r.headline.metric.ci_low if r.headline.metric else None,
               "high": r.headline.metric.ci_high if r.headline.metric else None,
               "href": PATHS.record(r.id)} for r in records if r.headline.value is not None]
    if points:
        body.insert(0, chart("headlines", charts.headlines(points)))
    if picked:
        body.append(section("picked diffs", Html("<ul>" + "".join(
            f"<li>{link(PATHS.diff(a, b), f'{short(a)} .. {short(b)}')}</li>"
            for a, b in picked) + "</ul>")))
    if lanes:
        body.append(section("lanes", Html(" · ".join(link(PATHS.lane(x), x) for x in lanes))))
    if claims:
        body.append(section("claims", link("claims.html", f"{claims} claims: the lab's word "
                                                          "beside the registry's")))
    if fleet:
        body.append(section("bench queue", link("fleet.html", "backlog, workers and jobs")))
    if skipped:
        body.append(section("not shown", table(["id", "why"], [
            [short(s.id), s.reason] for s in skipped])))
    return page("registry report", "\n".join(body), depth=0, charts=bool(points))


def _pick(r: RecordData) -> str:
    return (f'<input type="checkbox" class="pick" value="{esc(r.id)}" '
            f'aria-label="choose {esc(short(r.id))} to compare">')


def side_by_side(r: RecordData) -> dict[str, Any]:
    """What the index's side-by-side comparison shows of a record (report.js lays the
    chosen records out in columns): the same words and figures as every other view."""
    p = r.statement.predicate
    facts = {"id": short(r.id), "lane": r.lane or "-", "ran": when(_ran(r)),
             "decode tok/s": headline_text(r.headline) or "-",
             "quality": record_quality(r.headline.quality, p.imported is not None) or "",
             "verdict": verdict_word(r.verdict.status.value) if r.verdict else "",
             "imported": "yes" if p.imported else "no"}
    facts |= {name: identity(p.identity.value(name)) for name in (
        "model.architecture", *PRECISION_AXES, "parallel.tensor", "engine.version",
        "engine.commit")}
    facts |= {f"{s.suite}: {metric_label(m.name, m.formula)}": number(m.value) + (
        f" ({s.quality.state})" if s.quality and s.quality.degraded else "")
        for s in p.results for m in s.metrics.values()}
    facts |= {f"published: {f.metric} {f.aggregation}": number(f.value) + (
        f" (re-derived {number(f.rederived)})" if f.rederived is not None else
        " (not re-derived)") for f in p.published}
    return {"href": PATHS.record(r.id), "facts": facts}


def _headline_cell(r: RecordData) -> tuple[Any, Html]:
    """The signed headline figure, as `list` writes it, with its quality beside it when
    it is not valid; sortable by its value."""
    h = r.headline
    figure, _, flag = headline_text(h).partition(" (")
    text = Html(esc(figure) + (f' <span class="q">({esc(flag)}</span>' if flag else ""))
    if h.flagged:
        text = Html(f'<span class="flagged" data-quality="{esc(h.quality)}">{text}</span>')
    return ("" if h.value is None else h.value, text)


def _quality_word(r: RecordData) -> Html | str:
    """The record's quality, and UNPROVEN beside it as every view marks such a record."""
    quality = record_quality(r.headline.quality, r.statement.predicate.imported is not None)
    why = _unproven(r)
    flag = (f' <span class="status s-failed" title="{esc(why)}">UNPROVEN</span>' if why
            else "")
    if not quality:
        return Html(flag.strip())
    return Html(f'<span class="status s-{esc(quality.replace(" ", "-"))}">{esc(quality)}</span>'
                + flag)


def _unproven(r: RecordData) -> str | None:
    p = r.statement.predicate
    return mark(p.unproven, p.identity)


def _checked(r: RecordData, name: str) -> Html | str:
    """An identity value, with its failed cross-check beside it (never a bare value)."""
    field = r.statement.predicate.identity.fields.get(name)
    value = field.resolved if field else None
    failed = failed_check(field)
    if failed is None:
        return identity(value)
    return Html(f'{esc(value)} <span class="status s-failed" title="{esc(failed)}">'
                f"(cross-check failed)</span>")


def _verdict_word(v: Verdict | None) -> Html | str:
    """The contract's verdict; one it cannot apply (one run where self-consistency needs
    two) is `not applicable`, never drawn as a failure."""
    return status(verdict_word(v.status.value)) if v else ""


# ---- record ----

def record_page(r: RecordData, logs: dict[str, str], related: Sequence[tuple[str, str]],
                shown: Collection[str], reproductions: Sequence[RecordData] = ()) -> str:
    """`logs`: evidence source -> log page sha256; `related`: (label, diff page path);
    `shown`: the ids the site has a page for (a parent outside it is named, not linked)."""
    p = r.statement.predicate
    facts = {"id": Html(f"<code>{esc(r.id)}</code>"),
             "lane": link(_up(PATHS.lane(r.lane)), r.lane) if r.lane else "",
             "recipe": r.row.recipe, "summary": r.row.summary, "sealed": p.run.sealed_at,
             "ran": f"{p.run.started_at or '?'} to {p.run.finished_at or '?'}",
             "decode": _headline_cell(r)[1], "quality": _quality_line(r),
             "signer": r.row.signer, "ledger commit": r.row.ledger_commit,
             "parent": _record_link(p.parent, shown) if p.parent else "",
             "imported from": p.imported.capsule if p.imported else "",
             "UNPROVEN": _unproven(r) or ""}
    parts = [_facts(facts), _verdict_section(r), section("metrics", _metrics(r))]
    if r.bench is not None and r.bench.rows:
        formula, window = r.formula
        rates = [(short(r.id), f"{x.suite}/{x.prompt_id}", x.rate, ", ".join(x.flags))
                 for x in r.rates]
        parts.append(section("charts", chart("timeline", charts.timeline(r.bench.rows)),
                             chart("rates", charts.distribution(
                                 rates, formula_text(formula, window)))))
    if r.verifications:
        parts.append(section("verifications (signed attestations)", table(
            ["verification", "time", "policy", "result", "as", "signer"],
            [[Html(f"<code>{esc(short(v.id))}</code>"), v.statement.predicate.time_verified,
              v.statement.predicate.policy.name, status(v.statement.predicate.result.value),
              next((k for k, x in v.statement.predicate.records.items() if x == r.id), ""),
              short(v.signer)] for v in r.verifications])))
    parts.append(section("identity, with the evidence for each value", _identity(r, logs)))
    if reproductions:
        parts.append(section("reproductions of this record", table(
            ["record", "sealed", "decode tok/s", "quality", "verdict", ""],
            [[link(_up(PATHS.record(c.id)), short(c.id)),
              when(c.statement.predicate.run.sealed_at), _headline_cell(c),
              _quality_word(c), _verdict_word(c.verdict),
              link(_up(PATHS.diff(r.id, c.id)), "diff")] for c in reproductions])))
    if related:
        parts.append(section("compare", Html("<ul>" + "".join(
            f"<li>{link(_up(path), label)}</li>" for label, path in related) + "</ul>")))
    parts.append(section("sources", table(["role", "commit", "branch", "dirty", "path"], [
        [s.role, s.commit, s.branch, s.dirty, s.shown_path] for s in p.sources])))
    parts.append(section("artifacts", table(["name", "sha256"], [
        [s.name, Html(f"<code>{esc(s.sha256)}</code>")] for s in r.statement.subject])))
    return page(f"record {short(r.id)}", "\n".join(parts), depth=1, charts=bool(r.rates or (
        r.bench and r.bench.rows)))


def _quality_line(r: RecordData) -> Html | str:
    h = r.headline
    if h.quality is None:
        return ""
    return Html(_quality_word(r) + "".join(f"<br>{esc(reason)}" for reason in h.reasons[:10]))


def _record_link(rid: str, shown: Collection[str]) -> Html | str:
    return link(_up(PATHS.record(rid)), short(rid)) if rid in shown else short(rid)


def _facts(facts: dict[str, Any]) -> Html:
    return Html('<dl class="facts">' + "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts.items() if v not in ("", None))
        + "</dl>")


def _verdict_section(r: RecordData) -> Html:
    v = r.verdict
    stored = r.statement.predicate.contract
    lines = []
    if v is None:
        lines.append(f"<p>no verdict: {esc(r.verdict_note)}</p>")
    else:
        judged = [f"{v.rows_passed}/{v.rows_total} rows passed"] if v.rows_total else []
        judged += [f"against {esc(v.reference)}"] if v.reference else []
        lines.append(f"<p>{esc(v.contract)}: {status(verdict_word(v.status.value))}"
                     + (f" ({'; '.join(judged)})" if judged else "") + "</p>")
        if v.reasons:
            lines.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in v.reasons[:50])
                         + "</ul>")
    if stored and stored.verdict:
        lines.append(f'<p class="muted">stored at sealing (shown, never used): '
                     f"{esc(verdict_word(stored.verdict.status.value))}</p>")
    return section("verdict (re-derived from the raw rows)", *lines)


def _identity(r: RecordData, logs: dict[str, str]) -> Html:
    rows = []
    for name, f in sorted(r.statement.predicate.identity.fields.items()):
        evidence = Html("<br>".join(_evidence(e, logs) for e in f.evidence[:5]))
        rows.append([Html(f"<code>{esc(name)}</code>"), f.declared, _checked(r, name),
                     status(f.status.value), f.rule, evidence])
    return table(["field", "declared", "resolved", "status", "rule", "evidence"], rows,
                 cls="sortable wide", kinds=["ident", "", "", "", "can-go", ""])


def _evidence(e: Evidence, logs: dict[str, str]) -> str:
    where = f"{e.source}:{e.line}" if e.line else e.source
    sha = logs.get(e.source)
    anchor = link(_up(PATHS.log(sha)) + (f"#L{e.line}" if e.line else ""), where,
                  **{"class": "evidence"}) if sha else esc(where)
    text = f'<span class="evidence-text">{esc(clip(e.text))}</span>' if e.text else ""
    return anchor + text


def clip(text: str, limit: int = 160) -> str:
    """A long matched line cut with an ellipsis; the linked log line holds all of it."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _metrics(r: RecordData) -> Html:
    rows = []
    for s in r.statement.predicate.results:
        for m in s.metrics.values():
            rows.append([s.suite, metric_label(m.name, m.formula), (m.value, number(m.value)),
                         m.unit, m.formula,
                         m.count, _interval(m)])
    published = _published(r)
    if not rows:
        return Html(("<p>no rows measured by the registry: the published figures below are "
                     f"{NOT_JUDGED}</p>" if published else "<p>no metrics</p>") + published)
    return Html(table(["suite", "metric", "value", "unit", "formula", "n", "interval"], rows,
                      cls="sortable wide", kinds=["ident", "ident", "ident", "", "", "",
                                                  ""]) + published)


def _published(r: RecordData) -> str:
    """An imported record's figures as the lab published them, each beside the same
    figure re-derived from the capsule's rows (or why it was not)."""
    figures = r.statement.predicate.published
    if not figures:
        return ""
    return Html("<h3>published by the lab, re-derived from the rows</h3>" + table(
        ["metric", "aggregation", "published", "re-derived", "agrees", "source"],
        [[f.metric, f.aggregation, (f.value, number(f.value)),
          ("" if f.rederived is None else f.rederived,
           "not re-derived" + (f": {f.note}" if f.note else "") if f.rederived is None
           else number(f.rederived)),
          "" if f.agrees is None else status("yes" if f.agrees else "no"),
          f"{f.source} {f.key}"] for f in figures]))


def _interval(m: Metric) -> str:
    """Whatever the metric says about its uncertainty (fields beyond value and formula)."""
    extra = {k: v for k, v in m.model_dump().items() if k not in BASE_METRIC and v is not None}
    return "; ".join(f"{k} {plain(v)}" for k, v in extra.items())


# ---- diff ----

def diff_page(d: Diff, a: RecordData, b: RecordData) -> str:
    facts = _facts({"a": link(_up(PATHS.record(a.id)), f"{short(a.id)}  {a.row.summary}"),
                    "b": link(_up(PATHS.record(b.id)), f"{short(b.id)}  {b.row.summary}")})
    changed = sum(f.changed for f in d.identity)
    columns = ["field", "kind", "a", "b", "changed"]
    rows = [[Html(f"<code>{esc(f.name)}</code>"), f.kind.value, _side(f.a), _side(f.b),
             status("changed") if f.changed else ""] for f in d.identity]
    first = [row for f, row in zip(d.identity, rows, strict=True)
             if f.changed or f.name in PRECISION_AXES]
    rest = [row for f, row in zip(d.identity, rows, strict=True)
            if not (f.changed or f.name in PRECISION_AXES)]
    identity = Html(table(columns, first) + (
        f"<details><summary>{len(rest)} more fields, equal</summary>{table(columns, rest)}"
        "</details>" if rest else ""))
    contracts = table(["contract", "comparable", "why"], [
        [c.contract, status("comparable" if c.comparable else "not comparable"),
         "; ".join(c.reasons)]
        for c in d.contracts])
    metrics = table(["suite", "metric", "a", "b", "delta (b - a)", "relative", "ratio",
                     "formula"], [
        [m.suite, metric_label(m.name, m.formula_a), _flagged(m.a, m.quality_a),
         _flagged(m.b, m.quality_b),
         _num(m.delta),
         "" if m.relative is None else f"{m.relative * 100:+.2f}%",
         "" if m.ratio is None else f"{m.ratio:.3f}x", m.note or m.formula_a]
        for m in d.metrics], cls="sortable")
    equal = sum(o.equal for o in d.outputs)
    outputs = table(["suite", "prompt", "tokens", "text equal"], [
        [o.suite, o.prompt_id, "equal" if o.equal else
         f"differs at {o.first_diff_index}: {o.a_token} vs {o.b_token}", o.text_equal]
        for o in d.outputs if not o.equal])
    rates = [(f"a {short(a.id)}", f"{x.suite}/{x.prompt_id}", x.rate, ", ".join(x.flags))
             for x in a.rates]
    rates += [(f"b {short(b.id)}", f"{x.suite}/{x.prompt_id}", x.rate, ", ".join(x.flags))
              for x in b.rates]
    formula, window = a.formula
    parts = [facts,
             section(f"identity: {changed} changed (first), then the precision axes", identity),
             section("contracts: can these two be compared?", contracts),
             section("metrics", metrics)]
    if rates:
        parts.append(section("decode rate, a against b", chart("ab", charts.distribution(
            rates, formula_text(formula, window)))))
    parts.append(section(f"outputs: {equal}/{len(d.outputs)} prompts token-identical", outputs))
    return page(f"diff {short(a.id)} .. {short(b.id)}", "\n".join(parts), depth=1,
                charts=bool(rates))


def _side(field: Any) -> str:
    """An identity value as `registry diff` writes it (formats/display.py)."""
    if field is None:
        return "-"
    shown = identity(field.resolved)
    if field.declared is not None and field.declared != field.resolved:
        shown += f" (declared {identity(field.declared)})"
    return shown + (" (cross-check failed)" if failed_check(field) else "")


def _flagged(x: float | None, quality: str | None) -> Html | str:
    """A figure with its measurement flag unless valid (engine facts carry none)."""
    if quality in (None, "valid"):
        return _num(x)
    return Html(f'<span class="flagged">{esc(_num(x))} ({esc(quality)})</span>')


def _num(x: float | None) -> str:
    return "" if x is None else number(x)


# ---- lane ----

def lane_page(lane: str, records: Sequence[RecordData],
              teacher_changes: Sequence[dict[str, Any]]) -> str:
    records = sorted(records, key=_ran)  # by when each ran, not when it was sealed
    points = [{"id": short(r.id), "ran": _ran(r),
               "rate": r.headline.value, "quality": r.headline.quality or "",
               "low": r.headline.metric.ci_low if r.headline.metric else None,
               "high": r.headline.metric.ci_high if r.headline.metric else None,
               "href": _up(PATHS.record(r.id))}
              for r in records if r.headline.value is not None]
    rows = []
    for prev, r in zip([None, *records], records, strict=False):
        rows.append([link(_up(PATHS.record(r.id)), short(r.id)),
                     (_ran(r), when(_ran(r))), r.row.summary, _headline_cell(r), _quality_word(r),
                     _verdict_word(r.verdict),
                     link(_up(PATHS.diff(prev.id, r.id)), "diff with previous") if prev else ""])
    parts = [chart("history", charts.history(points, teacher_changes)) if points
             else Html("<p>no signed decode figure in this lane</p>"),
             section("records, in the order they ran", table(
                 ["id", "ran", "summary", "decode tok/s", "quality", "verdict", ""], rows,
                 cls="sortable", kinds=["ident", "ident", "", "", "", "", ""]))]
    if teacher_changes:
        parts.append(section("teacher changes", table(["when", "teacher", "commit"], [
            [t["at"], t["teacher"], Html(f"<code>{esc(short_id(t['commit']))}</code>")]
            for t in teacher_changes])))
    return page(f"lane {lane}", "\n".join(parts), depth=1, charts=bool(points))


def _ran(r: RecordData) -> str:
    """When the run ran (its start), which orders a lane's history: a record sealed or
    imported long after its run sits where it ran. The seal time where no start is known."""
    run = r.statement.predicate.run
    return run.started_at or run.sealed_at


# ---- log ----

def log_page(name: str, sha256: str, text: str) -> str:
    lines = "".join(f'<span id="L{n}" data-n="{n}">{esc(line)}</span>'
                    for n, line in enumerate(text.splitlines(), 1))
    body = (f'<p class="muted">sha256 <code>{esc(sha256)}</code></p>'
            f'<pre class="log">{lines}</pre>')
    return page(name, body, depth=1)
