"""The lab's model package (`packages/*/package.json`, `b70-model-package-v1`), checked
by the rules of its `tools/validate-repro-guides.py` @19e9587a (`_validate_package`),
with its messages: exactly the five commands, none naming a host-local path; a
container image by digest; the model at a 40-hex revision with its manifest; a featured
metric with its evidence, or none and a `benchmark_status` saying why; contributors with
their kind, status and profile; optional performance profiles of at least two measured
points, x unique and ascending; `missing` gates unless a starter.

With the lab's `repro/guide-catalog.json`, the package is held against its catalog entry
(id, guide, audience and `clean_host_tested` equal) and its guide class is derived
(registry/publish/labguide.py).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlparse

from registry.base.canonical import is_git_sha
from registry.publish.labrules import PACKAGE_FORMAT, LabCheck, Rules

COMMANDS = frozenset({"preflight", "launch", "health", "benchmark", "stop"})
STATUSES = frozenset({"candidate", "starter", "preview"})
CONTRIBUTOR_KINDS = frozenset({"lab", "external"})
CONTRIBUTOR_STATUSES = frozenset({"acknowledged", "credited", "validated-boost", "integrated"})
HOST_LOCAL = re.compile(r"(?:file://|/(?:home|mnt|media)/)")
SLUG = re.compile(r"[a-z0-9][a-z0-9-]*")
IMAGE = re.compile(r".+@sha256:[0-9a-f]{64}")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
LIBRARY_TEXT = ("model_family", "publisher", "variant", "summary", "quantization",
                "runtime_label")
LIBRARY_LISTS = ("operating_systems", "delivery", "modalities", "use_cases", "tags")
PERFORMANCE_METRICS = {"decode": "tok/s", "prefill": "tok/s", "ttft": "ms",
                       "aggregate_decode": "tok/s"}
X_METRICS = frozenset({"context_tokens", "concurrent_sequences", "speculative_tokens"})
IN_CLONE = ["every dependency, evidence, manifest and patch item resolves inside the "
            "lab's clone", "packages/catalog.json is the catalog built from the packages"]


def check_package_json(path: Path, raw: object, catalog: object | None) -> LabCheck:
    from registry.publish.labguide import catalog_entry, guide_class

    label = path.name
    r = Rules()
    p: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if r.need(isinstance(raw, dict), label, f"{label}: not a JSON object"):
        _package(r, label, p)
    guide: str | None = None
    missing: list[str] = []
    not_checked = list(IN_CLONE)
    if catalog is None:
        not_checked.append("the guide class and the package's agreement with its guide "
                           "catalog entry (give the lab's repro/guide-catalog.json)")
    else:
        entry = catalog_entry(r, catalog, p)
        if entry is not None:
            _against_entry(r, label, p, entry)
            guide, missing = guide_class(r, entry)
    status = p.get("status")
    return LabCheck(kind="lab-package", path=str(path),
                    format=p.get("format") if isinstance(p.get("format"), str) else None,
                    status=status if isinstance(status, str) else None,
                    passed=not r.findings, findings=r.findings, not_checked=not_checked,
                    guide_class=guide, missing=missing)


def _package(r: Rules, label: str, p: dict[str, Any]) -> None:
    r.need(p.get("format") == PACKAGE_FORMAT, "format",
           f"{label}: format must be {PACKAGE_FORMAT!r}")
    status = p.get("status")
    r.need(status in STATUSES, "status", f"{label}: unknown package status {status!r}")
    if status == "starter":
        r.need(p.get("clean_host_tested") is True, "clean_host_tested",
               f"{label}: starter package requires clean_host_tested=true")
    library = p.get("library")
    if isinstance(library, dict):
        _library(r, label, library, status)
    else:
        r.need(False, "library", f"{label}: library must be an object")
    _contributors(r, label, p.get("contributors"))
    _profiles(r, label, p.get("performance_profiles"))
    hardware = p.get("hardware")
    cards = hardware.get("cards") if isinstance(hardware, dict) else None
    r.need(isinstance(cards, int) and not isinstance(cards, bool) and cards >= 1,
           "hardware.cards", f"{label}: hardware.cards must be a positive integer")
    _model(r, label, p.get("model"))
    _runtime(r, label, p.get("runtime"), library)
    _patches(r, label, p.get("project_patches"))
    _commands(r, label, p.get("commands"))
    dependencies = p.get("dependencies")
    if r.need(isinstance(dependencies, list) and bool(dependencies), "dependencies",
              f"{label}: dependencies must be a non-empty list"):
        assert isinstance(dependencies, list)
        for dependency in dependencies:
            _inside(r, label, dependency, "dependencies")
    missing = p.get("missing")
    if status == "starter":
        r.need(not missing, "missing", f"{label}: starter package cannot retain missing gates")
    else:
        r.need(isinstance(missing, list) and bool(missing) and
               all(isinstance(m, str) and m for m in missing), "missing",
               f"{label}: non-starter package must state missing gates")


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _inside(r: Rules, owner: str, value: object, rule: str) -> None:
    """A dependency: a path inside the lab's repository (resolving it needs the clone)."""
    if not r.need(isinstance(value, str), rule,
                  f"{owner}: dependency must be a repository-relative string"):
        return
    parsed = urlparse(str(value))
    prefix = "/steveseguin/b70-optimization-lab/blob/main/"
    internal = None
    if not parsed.scheme and not parsed.netloc:
        internal = PurePosixPath(parsed.path)
    elif parsed.netloc == "github.com" and parsed.path.startswith(prefix):
        internal = PurePosixPath(parsed.path[len(prefix):])
    r.need(internal is not None and not internal.is_absolute() and ".." not in internal.parts,
           rule, f"{owner}: dependency must point inside this repository: {value}")


def _library(r: Rules, label: str, library: dict[str, Any], status: object) -> None:
    for field in LIBRARY_TEXT:
        r.need(_text(library.get(field)), f"library.{field}",
               f"{label}: library.{field} must be a non-empty string")
    for field in LIBRARY_LISTS:
        values = library.get(field)
        r.need(isinstance(values, list) and bool(values) and all(_text(v) for v in values),
               f"library.{field}", f"{label}: library.{field} must be a non-empty string list")
    systems, delivery = library.get("operating_systems"), library.get("delivery")
    if isinstance(systems, list):
        r.need(all(v in {"Linux", "Windows"} for v in systems), "library.operating_systems",
               f"{label}: library.operating_systems values must be in ['Linux', 'Windows']")
    if isinstance(delivery, list):
        r.need(all(v in {"native", "container"} for v in delivery), "library.delivery",
               f"{label}: library.delivery values must be in ['container', 'native']")
    day = library.get("published_at")
    r.need(isinstance(day, str) and bool(DAY.fullmatch(day)), "library.published_at",
           f"{label}: library.published_at must be YYYY-MM-DD")
    _featured(r, label, library, status)


def _featured(r: Rules, label: str, library: dict[str, Any], status: object) -> None:
    metric = library.get("featured_metric")
    if metric is None:
        r.need(_text(library.get("benchmark_status")), "library.benchmark_status",
               f"{label}: a package without a featured metric must state "
               "library.benchmark_status")
        r.need(status != "starter", "library.featured_metric",
               f"{label}: starter packages require a featured metric")
        return
    if not r.need(isinstance(metric, dict), "library.featured_metric",
                  f"{label}: library.featured_metric must be an object or null"):
        return
    value = metric.get("value")
    r.need(isinstance(value, int | float) and not isinstance(value, bool) and value > 0,
           "library.featured_metric.value",
           f"{label}: library.featured_metric.value must be a positive number")
    for field in ("unit", "label", "scope"):
        r.need(_text(metric.get(field)), f"library.featured_metric.{field}",
               f"{label}: library.featured_metric.{field} must be a non-empty string")
    _inside(r, label, metric.get("evidence"), "library.featured_metric.evidence")


def _contributors(r: Rules, label: str, contributors: object) -> None:
    if not r.need(isinstance(contributors, list) and bool(contributors), "contributors",
                  f"{label}: contributors must be a non-empty list"):
        return
    assert isinstance(contributors, list)
    seen: set[str] = set()
    for i, c in enumerate(contributors):
        where = f"{label}: contributors[{i}]"
        if not r.need(isinstance(c, dict), f"contributors[{i}]", f"{where} must be an object"):
            continue
        cid = c.get("id")
        if r.need(isinstance(cid, str) and bool(SLUG.fullmatch(cid)), f"contributors[{i}].id",
                  f"{where}.id must be lowercase and hyphenated"):
            r.need(cid not in seen, f"contributors[{i}].id",
                   f"{label}: duplicate contributor id {cid!r}")
            seen.add(str(cid))
        for field in ("name", "contribution", "validated_effect"):
            r.need(_text(c.get(field)), f"contributors[{i}].{field}",
                   f"{where}.{field} must be a non-empty string")
        r.need(c.get("kind") in CONTRIBUTOR_KINDS, f"contributors[{i}].kind",
               f"{where}.kind must be in {sorted(CONTRIBUTOR_KINDS)}")
        r.need(c.get("status") in CONTRIBUTOR_STATUSES, f"contributors[{i}].status",
               f"{where}.status must be in {sorted(CONTRIBUTOR_STATUSES)}")
        profile = urlparse(c["profile"]) if isinstance(c.get("profile"), str) else None
        r.need(profile is not None and profile.scheme in {"http", "https"} and
               bool(profile.netloc), f"contributors[{i}].profile",
               f"{where}.profile must be an HTTP(S) URL")
        _inside(r, where, c.get("evidence"), f"contributors[{i}].evidence")


def _profiles(r: Rules, label: str, profiles: object) -> None:
    if profiles is None:
        return
    if not r.need(isinstance(profiles, list) and bool(profiles), "performance_profiles",
                  f"{label}: performance_profiles must be a non-empty list when present"):
        return
    assert isinstance(profiles, list)
    for i, profile in enumerate(profiles):
        where = f"{label}: performance_profiles[{i}]"
        if r.need(isinstance(profile, dict), f"performance_profiles[{i}]",
                  f"{where} must be an object"):
            _profile(r, where, f"performance_profiles[{i}]", profile)


def _profile(r: Rules, where: str, rule: str, profile: dict[str, Any]) -> None:
    metric = profile.get("metric")
    if r.need(metric in PERFORMANCE_METRICS, f"{rule}.metric",
              f"{where}.metric must be in {sorted(PERFORMANCE_METRICS)}"):
        unit = PERFORMANCE_METRICS[str(metric)]
        r.need(profile.get("unit") == unit, f"{rule}.unit",
               f"{where}.unit must be {unit!r} for metric {metric!r}")
    _inside(r, where, profile.get("evidence"), f"{rule}.evidence")
    x = profile.get("x_metric", "context_tokens")
    if not r.need(x in X_METRICS, f"{rule}.x_metric",
                  f"{where}.x_metric must be in {sorted(X_METRICS)}"):
        x = "context_tokens"
    points = profile.get("points")
    if not r.need(isinstance(points, list) and len(points) >= 2, f"{rule}.points",
                  f"{where}.points must contain at least two measurements"):
        return
    assert isinstance(points, list)
    least = 1 if x == "concurrent_sequences" else 0
    xs = [pt.get(x) for pt in points if isinstance(pt, dict)]
    ints = [v for v in xs if isinstance(v, int) and not isinstance(v, bool) and v >= least]
    r.need(len(ints) == len(points), f"{rule}.points",
           f"{where}.points: every {x} must be an integer of at least {least}")
    values = [pt.get("value") for pt in points if isinstance(pt, dict)]
    r.need(len(values) == len(points) and all(
        isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values),
        f"{rule}.points", f"{where}.points: every value must be a positive number")
    if len(ints) == len(points):
        r.need(ints == sorted(set(ints)), f"{rule}.points",
               f"{where}.points must use unique, increasing {x}")


def _model(r: Rules, label: str, model: object) -> None:
    if not r.need(isinstance(model, dict), "model", f"{label}: model must be an object"):
        return
    assert isinstance(model, dict)
    revision = model.get("revision")
    r.need(isinstance(revision, str) and is_git_sha(revision), "model.revision",
           f"{label}: model revision must be an immutable 40-character commit")
    _inside(r, label, model.get("manifest"), "model.manifest")


def _runtime(r: Rules, label: str, runtime: object, library: object) -> None:
    kind = runtime.get("kind") if isinstance(runtime, dict) else None
    if not r.need(kind in {"container", "native"}, "runtime.kind",
                  f"{label}: runtime.kind must be container or native"):
        return
    assert isinstance(runtime, dict)
    if kind == "container":
        image = runtime.get("image")
        r.need(isinstance(image, str) and bool(IMAGE.fullmatch(image)), "runtime.image",
               f"{label}: container image must be pinned by sha256 digest")
    delivery = library.get("delivery") if isinstance(library, dict) else None
    if isinstance(delivery, list):
        r.need(kind in delivery, "library.delivery",
               f"{label}: library.delivery must include runtime.kind")


def _patches(r: Rules, label: str, patches: object) -> None:
    required = patches.get("required") if isinstance(patches, dict) else None
    if not r.need(type(required) is bool, "project_patches.required",
                  f"{label}: project_patches.required must be boolean"):
        return
    assert isinstance(patches, dict)
    items = patches.get("items")
    if not r.need(isinstance(items, list), "project_patches.items",
                  f"{label}: project_patches.items must be a list"):
        return
    assert isinstance(items, list)
    r.need(not (required and not items), "project_patches.items",
           f"{label}: required project patches cannot have an empty item list")
    r.need(not (not required and items), "project_patches.items",
           f"{label}: patch items exist while project_patches.required is false")
    for item in items:
        _inside(r, label, item, "project_patches.items")


def _commands(r: Rules, label: str, commands: object) -> None:
    if not r.need(isinstance(commands, dict) and set(commands) == COMMANDS, "commands",
                  f"{label}: commands must contain exactly {sorted(COMMANDS)}"):
        return
    assert isinstance(commands, dict)
    if not r.need(all(_text(v) for v in commands.values()), "commands",
                  f"{label}: package commands must be non-empty strings"):
        return
    for name, command in commands.items():
        r.need(not HOST_LOCAL.search(command), f"commands.{name}",
               f"{label}: commands.{name} contains a host-local path; use a documented "
               "placeholder or repository-relative path")


def _against_entry(r: Rules, label: str, p: dict[str, Any], entry: dict[str, Any]) -> None:
    for field in ("id", "guide", "audience", "clean_host_tested"):
        r.need(p.get(field) == entry.get(field), field,
               f"{label}: {field} must match its guide-catalog entry")
    if p.get("status") == "starter":
        r.need(entry.get("classification") == "starter-guide", "status",
               f"{label}: starter package requires starter-guide certification")
