"""`registry claim import PATH`: a lab's claims as it publishes them, each with its whole
history (the lab's statements, attributed to its file, not re-signed as events of
this ledger), its verification figure and its evidence packet.

PATH is a claim file, a folder with `claim.json` beside its packet, a folder of such
folders, or a lab checkout holding `claims/*.json` (evidence paths then resolve from
the checkout; the path a claim names must stay inside it). A packet that holds run
evidence is also imported as records (registry/importer) and the claim points at
them; a packet of markdown only is a claim whose rows are absent, never a refusal.
Nothing about identity is guessed: what the claim's `recipe` states, as it states it
(a speculative method written in the `quant` field is moved to `speculative`, and
said so).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field

from registry.base.hashing import sha256_file
from registry.base.model import Frozen
from registry.base.safeload import loads_json
from registry.claims.models import (
    REDERIVED,
    ClaimBody,
    ClaimedFigure,
    ClaimedIdentity,
    LabEntry,
    LabFigure,
    LabSource,
)
from registry.claims.packet import Packet, read_packet
from registry.errors import InvalidInput, RegistryError
from registry.formats.metricwords import named
from registry.store.home import Home

CLAIM_FILE = "claim.json"
SPECULATIVE = re.compile(r"\b(?:dflash|mtp\d*|eagle\d*|ngram|dspark\d*|medusa)\b", re.I)
LEVEL = re.compile(r"Evidence level[^`\n]*`([^`]+)`", re.I)


class ImportedClaim(Frozen):
    id: str
    status: str
    claimed: float
    verification: float | None
    added: bool
    packet: Packet
    records: list[str] = Field(default_factory=list)
    rows: int = Field(0, description="per-row values found in the packet")
    lab_level: str | None = None
    note: str | None = None


class ClaimImport(Frozen):
    source: str
    claims: list[ImportedClaim]
    added: int


def import_claims(home: Home, path: Path, *, records: bool = True) -> ClaimImport:
    """Import every claim found at `path` (see the module's rules)."""
    found = _claim_files(path)
    for file, _, _, label in found:  # every file read before anything is written
        lab_claim(_load(file), label, "0" * 64)
    done = [_one(home, file, folder, only, label, records)
            for file, folder, only, label in found]
    return ClaimImport(source=str(path), claims=done, added=sum(c.added for c in done))


Placed = tuple[Path, Path | None, str | None, str]  # file, packet folder, only file, label
PACKET_FILES = ("STATUS.md", "README.md")  # a file that stands for its whole folder


def _claim_files(path: Path) -> list[Placed]:
    """(claim file, its packet folder, the one file of it that is the packet when the
    evidence names a file in a larger folder, the file's name as shown) per claim."""
    if path.is_file():
        return [_placed(path, path.parent)]
    if not path.is_dir():
        raise InvalidInput(f"{path}: no such file or folder")
    if (path / "claims").is_dir():
        files = sorted((path / "claims").glob("*.json"))
        return [_placed(f, path) for f in files if f.is_file() and not f.is_symlink()]
    if (path / CLAIM_FILE).is_file():
        return [_placed(path / CLAIM_FILE, path)]
    inner = sorted(p / CLAIM_FILE for p in path.iterdir()
                   if p.is_dir() and not p.is_symlink() and (p / CLAIM_FILE).is_file())
    if not inner:
        raise InvalidInput(f"{path}: no claims found (claims/*.json, claim.json, or folders "
                           "holding claim.json)")
    return [_placed(f, path) for f in inner]


def _placed(file: Path, root: Path) -> Placed:
    label = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
    if file.name == CLAIM_FILE:  # the packet is the folder the claim file sits in
        return file, file.parent, None, label
    if file.parent.name == "claims":  # a lab checkout: the claim names its evidence path
        folder, only = _evidence(file, file.parent.parent)
        return file, folder, only, label
    return file, None, None, label


def _evidence(file: Path, checkout: Path) -> tuple[Path | None, str | None]:
    """The packet a checkout's claim names: a folder; the folder of its STATUS.md or
    README.md; else the one file (never the large folder around it)."""
    from registry.base.confine import inside

    data = _load(file)
    for part in ("verification", "claimed"):
        block = data.get(part)
        evidence = block.get("evidence") if isinstance(block, dict) else None
        if isinstance(evidence, str) and evidence:
            target = inside(checkout, evidence)
            if target.is_dir():
                return target, None
            if target.is_file():
                return target.parent, None if target.name in PACKET_FILES else target.name
            return None, None
    return None, None


def _load(file: Path) -> dict[str, Any]:
    try:
        data = loads_json(file.read_bytes())
    except (OSError, ValueError) as e:
        raise InvalidInput(f"{file}: not a JSON claim file ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise InvalidInput(f"{file}: not a claim (no `id`)")
    return data


def _one(home: Home, file: Path, folder: Path | None, only: str | None, label: str,
         with_records: bool) -> ImportedClaim:
    from registry.claims.register import import_claim

    data = _load(file)
    body, note = lab_claim(data, label, sha256_file(file))
    assert body.lab is not None
    figures = {"claimed": body.claimed.value}
    lv = body.lab.verification
    if lv is not None and lv.value is not None:
        figures["verification"] = lv.value
    aggregations = {"claimed": body.claimed.metric.aggregation,
                    "verification": lv.metric.aggregation if lv and lv.metric else None}
    skip = {file.relative_to(folder).as_posix()} if folder and file.is_relative_to(folder) \
        else set()
    packet = read_packet(folder, folder.name if folder else None, figures, aggregations, skip,
                         only=only)
    level = _status_level(folder) if only is None else None
    ids, why = _records(home, folder) if with_records and folder and only is None else (
        [], "no record: the packet is one file of a larger folder" if only else None)
    # kept with the claim so every view can show the figure re-derived beside the lab's
    again = [r.model_dump(mode="json") for r in packet.rederived]
    extra = {**body.lab.raw, **({"evidence_level": level} if level else {}),
             **({REDERIVED: again} if again else {})}
    body = body.model_copy(update={"records": ids, "lab": body.lab.model_copy(
        update={"raw": extra})})
    view, added = import_claim(home, body)
    notes = [n for n in (note, why, None if packet.rows or not packet.files else
                         "no per-row values in the packet: figures are published only") if n]
    return ImportedClaim(id=view.id, status=view.status, claimed=body.claimed.value,
                         verification=lv.value if lv else None, added=added, packet=packet,
                         records=ids, rows=packet.rows, lab_level=level,
                         note="; ".join(notes) or None)


def lab_claim(data: dict[str, Any], label: str, sha256: str) -> tuple[ClaimBody, str | None]:
    """The lab's claim file as a claim body (its own words kept), and a note when a
    field had to be read for what it says rather than where it is."""
    claimed = _dict(data, "claimed")
    recipe = _dict(data, "recipe")
    quant, speculative = _str(recipe.get("quant")), _str(recipe.get("speedup"))
    note = None
    if quant and not speculative and SPECULATIVE.search(quant):
        quant, speculative = None, quant
        note = f"recipe.quant {speculative!r} names a speculative method: read as speculative"
    identity = ClaimedIdentity(model=_str(data.get("model")), quantization=quant,
                               engine=_str(recipe.get("engine")), speculative=speculative,
                               cards=_int(recipe.get("cards")), tp=_int(recipe.get("tp")))
    value = claimed.get("tok_s")
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidInput(f"{label}: claimed.tok_s is not a number")
    figure = ClaimedFigure(value=float(value), metric=named(str(claimed.get("metric", ""))),
                           by=str(claimed.get("by", "?")), date=_str(claimed.get("date")))
    history = [LabEntry(date=_str(h.get("date")), event=str(h.get("event", "")))
               for h in data.get("history") or [] if isinstance(h, dict)]
    evidence = [e for e in (_str(claimed.get("evidence")),
                            _str(_dict(data, "verification").get("evidence"))) if e]
    raw = {k: data[k] for k in ("recipe", "submitter", "upstream") if k in data}
    lab = LabSource(path=label, sha256=sha256, status=str(data.get("status", "")),
                    history=history, verification=_verification(data), raw=raw,
                    repository=_str(_dict(data, "upstream").get("repo")))
    url = _str(_dict(data, "submitter").get("url"))
    return ClaimBody(id=str(data["id"]), model=identity.model, claimed=figure,
                     identity=identity, evidence=evidence, submitter=url, lab=lab), note


def _verification(data: dict[str, Any]) -> LabFigure | None:
    v = data.get("verification")
    if not isinstance(v, dict):
        return None
    value = v.get("tok_s")
    metric = v.get("metric")
    return LabFigure(value=float(value) if isinstance(value, int | float) else None,
                     metric=named(metric) if isinstance(metric, str) else None,
                     date=_str(v.get("date")), evidence=_str(v.get("evidence")))


def _status_level(folder: Path | None) -> str | None:
    """The evidence level a community entry's STATUS.md states, verbatim."""
    status = folder / "STATUS.md" if folder else None
    if status is None or not status.is_file() or status.is_symlink():
        return None
    m = LEVEL.search(status.read_text(errors="replace"))
    return m.group(1) if m else None


def _records(home: Home, folder: Path) -> tuple[list[str], str | None]:
    """The packet imported as records when it holds run evidence; else why not. Of a
    community entry (a STATUS.md) only the lab's `validation/` is: the contributor's
    `reported/` is never the lab's evidence."""
    from registry.claims.packet import VALIDATION
    from registry.importer.capsule import Options, import_capsule
    from registry.importer.layout import detect

    if (folder / "STATUS.md").is_file():
        folder = folder / VALIDATION
        if not folder.is_dir() or folder.is_symlink():
            return [], "no record: a community entry without the lab's validation/"
    try:
        if detect(folder).claims_only():  # the claim itself is never its own evidence
            return [], "no record: the packet holds no run evidence (log, rows, launch)"
        done = import_capsule(folder, home=home, options=Options())
    except RegistryError as e:
        if "no run evidence found" in e.message:
            return [], "no record: the packet holds no run evidence (log, rows, launch)"
        return [], f"no record: {e.message[:200]}"
    return [d.record.id for d in done], None


def _dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
