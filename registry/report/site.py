"""`registry report`: write the static site for chosen records.

The site is built in a temporary folder beside the target and moved into place at the
end, so a failed report leaves the previous one (or nothing) and never half a site.
An existing target is replaced only when it is an earlier report (it holds MARKER).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from registry.base.canonical import is_sha256
from registry.base.model import Frozen
from registry.base.parallel import map_parts
from registry.errors import Refused
from registry.report import pages
from registry.report.html import short
from registry.report.load import RecordData, Skipped, load_records
from registry.report.pages import PATHS, SAFE_NAME
from registry.store.home import Home
from registry.store.rows import RecordRow

if TYPE_CHECKING:
    from registry.fleet.queue import QueueSummary

MARKER = ".registry-report"
LOG_LIMIT = 64 * 2**20  # a bigger artifact is listed, not rendered


class Selection(Frozen):
    ids: list[str] = Field(default_factory=list)
    where: list[str] = Field(default_factory=list)
    lane: str | None = None
    diffs: list[tuple[str, str]] = Field(default_factory=list, description="(a, b) id "
                                         "prefixes whose diff the user picked: both shown")


class ReportSummary(Frozen):
    out: str
    index: str
    records: int
    skipped: list[Skipped]
    pages: dict[str, int] = Field(description="page kind -> pages written")
    seconds: float


def select(home: Home, selection: Selection) -> list[RecordRow]:
    """Index rows of the chosen records, newest first (all records when nothing is chosen);
    `where` takes the typed conditions of `registry compare`. The rows only choose: each
    record is then read from the ledger and shown as signed (report/load.py)."""
    from registry.compare.table import filter_ids, split_where
    from registry.store.query import index_rows, resolve_id

    equal, typed = split_where([*selection.where, *(
        [f"lane={selection.lane}"] if selection.lane else [])])
    if selection.ids:
        rows: dict[str, RecordRow] = {}
        for prefix in selection.ids:
            rid = resolve_id(home, prefix)
            rows.update((r.id, r) for r in index_rows(home, [*equal, f"id={rid}"]))
        found = sorted(rows.values(), key=lambda r: (r.created_at, r.id), reverse=True)
    else:
        found = index_rows(home, equal)
    kept = set(filter_ids(home, [r.id for r in found], typed))
    picked = {resolve_id(home, ref) for pair in selection.diffs for ref in pair}
    missing = picked - {r.id for r in found}
    extra = [r for rid in sorted(missing) for r in index_rows(home, [f"id={rid}"])]
    return sorted([*(r for r in found if r.id in kept), *extra],
                  key=lambda r: (r.created_at, r.id), reverse=True)


def build_report(home: Home, out: Path, selection: Selection,
                 fleet: QueueSummary | None = None) -> ReportSummary:
    """The site for the chosen records; with `fleet`, a page of the bench queue too."""
    started = time.perf_counter()
    _check_target(out)
    records, skipped = load_records(home, select(home, selection))
    picked = _picked(home, selection)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        counts = _write_site(home, staging, records, skipped, picked, fleet is not None)
        if fleet is not None:
            from registry.report.fleet import PATH, fleet_page

            _write(staging, PATH, fleet_page(fleet, {r.id for r in records}))
            counts["fleet"] = 1
        (staging / MARKER).write_text("written by registry report\n")
        _replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return ReportSummary(out=str(out), index=str(out / "index.html"), records=len(records),
                         skipped=skipped, pages=counts,
                         seconds=round(time.perf_counter() - started, 3))


def _check_target(out: Path) -> None:
    if out.exists() and not (out.is_dir() and (not any(out.iterdir()) or (out / MARKER).exists())):
        raise Refused(f"{out}: exists and is not an earlier report; nothing written",
                      hint="name a new or empty folder, or an earlier report's folder")


def _replace(staging: Path, out: Path) -> None:
    os.chmod(staging, 0o755)  # mkdtemp makes it private; a site is meant to be read
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        staging.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(out)


def _picked(home: Home, selection: Selection) -> list[tuple[str, str]]:
    from registry.store.query import resolve_id

    return [(resolve_id(home, a), resolve_id(home, b)) for a, b in selection.diffs]


def _write_site(home: Home, site: Path, records: list[RecordData],
                skipped: Sequence[Skipped], picked: Sequence[tuple[str, str]] = (),
                fleet: bool = False) -> dict[str, int]:
    for folder in ("assets", "records", "diffs", "lanes", "logs"):
        (site / folder).mkdir()
    _assets(site / "assets")
    by_lane: dict[str, list[RecordData]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.statement.predicate.run.sealed_at, r.id)):
        if r.lane:
            by_lane[r.lane].append(r)
    by_id = {r.id: r for r in records}
    pairs = _pairs(records, by_lane)
    for a, b in picked:  # the user's own pairs, whatever their lanes
        if a in by_id and b in by_id and a != b:
            pairs.setdefault((a, b), ("picked diff with", "picked diff with"))
    logs = _logs(home, site, records)
    related: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (a, b), (label_a, label_b) in pairs.items():
        path = PATHS.diff(a, b)
        related[a].append((f"{label_a} {short(b)}", path))
        related[b].append((f"{label_b} {short(a)}", path))
    children: dict[str, list[RecordData]] = defaultdict(list)
    for r in records:
        if r.statement.predicate.parent in by_id:
            children[str(r.statement.predicate.parent)].append(r)
    # (a, b) for a diff page, (id, None) for a record page: pure work, split over CPUs
    jobs: list[tuple[str, str | None]] = [*pairs, *((r.id, None) for r in records)]

    def write_pages(part: range) -> list[int]:
        sides: dict[str, Any] = {}  # a record is in up to three diffs: its side built once
        for a, b in (jobs[i] for i in part):
            if b is not None:
                _write(site, PATHS.diff(a, b), pages.diff_page(_diff(by_id[a], by_id[b], sides),
                                                               by_id[a], by_id[b]))
            else:
                _write(site, PATHS.record(a), pages.record_page(
                    by_id[a], logs.get(a, {}), related[a], by_id, children[a]))
        return []

    map_parts(write_pages, len(jobs))
    for lane, members in by_lane.items():
        _write(site, PATHS.lane(lane), pages.lane_page(lane, members,
                                                       teacher_changes(home, members)))
    shown_pairs = [(a, b) for a, b in picked if (a, b) in pairs]
    claims = _claims(home, site, {r.id for r in records})
    _write(site, "index.html", pages.index_page(records, skipped, sorted(by_lane), shown_pairs,
                                                fleet, claims))
    return {"records": len(records), "diffs": len(pairs), "lanes": len(by_lane),
            "logs": len({sha for m in logs.values() for sha in m.values()}), "index": 1,
            "claims": claims}


def _claims(home: Home, site: Path, shown: set[str]) -> int:
    """claims.html when the home holds claims; how many it shows."""
    from registry.claims.view import list_claims
    from registry.report.claims import PATH, claims_page

    claims = list_claims(home)
    if claims:
        _write(site, PATH, claims_page(claims, shown))
    return len(claims)


def _write(site: Path, path: str, text: str) -> None:
    (site / path).write_text(text, encoding="utf-8")


def _assets(folder: Path) -> None:
    """The stylesheet, the script and the vendored Vega bundle with its licenses, as the
    package ships them (tools/vega_bundle.py writes vega.js; nothing is fetched)."""
    for name in ("report.css", "report.js", "vega.js", "vega.LICENSE.txt"):
        (folder / name).write_bytes(resources.files("registry.report").joinpath(
            "assets", name).read_bytes())


def _pairs(records: Sequence[RecordData],
           by_lane: dict[str, list[RecordData]]) -> dict[tuple[str, str], tuple[str, str]]:
    """Which diffs to write, (a, b) -> how each names the other: each record against the
    one before it in its lane, each reproduction against its parent (both in the report)."""
    out = {(a.id, b.id): ("next in lane", "previous in lane")
           for members in by_lane.values() for a, b in pairwise(members)}
    shown = {r.id for r in records}
    for r in records:
        parent = r.statement.predicate.parent
        if parent and parent in shown and (parent, r.id) not in out:
            out[(parent, r.id)] = ("reproduced by", "reproduces")
    return out


def _diff(a: RecordData, b: RecordData, sides: dict[str, Any]) -> Any:
    """The diff of two records as signed; `sides` keeps each record's side for its next diff."""
    from registry.compare.diff import diff
    from registry.compare.sides import side_as_signed

    def side(r: RecordData) -> Any:
        if r.id not in sides:
            sides[r.id] = side_as_signed(r.id, r.statement, r.bench if r.bench_intact else None)
        return sides[r.id]

    return diff(side(a), side(b))


def _logs(home: Home, site: Path, records: Sequence[RecordData]) -> dict[str, dict[str, str]]:
    """Write one page per distinct evidence file; record id -> {source: sha256}."""
    from registry.store.objects import ObjectStore

    store = ObjectStore(home.objects)
    written: set[str] = set()
    out: dict[str, dict[str, str]] = {}
    for r in records:
        p = r.statement.predicate
        sources = {e.source for f in p.identity.fields.values() for e in f.evidence}
        mapping = {}
        for source in sorted(sources):
            subject = r.statement.subject_named(p.artifacts.get(source, source))
            if subject is None or not is_sha256(subject.sha256):
                continue
            if subject.sha256 not in written and not _log(store.path(subject.sha256), site,
                                                          source, subject.sha256):
                continue
            written.add(subject.sha256)
            mapping[source] = subject.sha256
        out[r.id] = mapping
    return out


def _log(path: Path, site: Path, name: str, sha256: str) -> bool:
    try:
        if path.stat().st_size > LOG_LIMIT:
            return False
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return False  # a missing object: the evidence is named, not linked
    _write(site, PATHS.log(sha256), pages.log_page(name, sha256, text))
    return True


def teacher_changes(home: Home, members: Sequence[RecordData]) -> list[dict[str, Any]]:
    """Every ledger commit that set the lane's teacher: when, and which teacher (as
    signed, read by the store's own binding reader; a binding no trusted key signed
    says why it is not shown)."""
    from registry.contracts import teacher_lane
    from registry.store.teachers import binding_history

    recipe = next((r.recipe for r in reversed(members) if r.recipe), None)
    lane = teacher_lane(recipe) if recipe else members[-1].lane
    if not lane or not SAFE_NAME.match(lane):
        return []
    return [{"at": c.at, "commit": c.commit,
             "teacher": c.teacher or f"not shown ({c.problem})"}
            for c in binding_history(home, lane)]
