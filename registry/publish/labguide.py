"""A lab guide's class from its `repro/guide-catalog.json` entry, as the lab's
`tools/validate-repro-guides.py` @19e9587a and `docs/reproduction-guide-certification.md`
decide it.

Only `starter-guide` is earned by rule: a clean-host replay, all eight components of the
dependency closure, a beginner audience and no missing gate. The classes below it
(`candidate-portable-repro`, `lab-replay`, `record-capsule`, `research-status`,
`archived`) are the lab's call, stated in the entry; the lab's rule for them is that each
names at least one `missing` gate. So the derived class is `starter-guide` when its gates
hold, else the entry's stated class, and `missing` is every starter gate that fails
(derived here) followed by the gates the entry states.
"""

from __future__ import annotations

from typing import Any

from registry.publish.labrules import CATALOG_FORMAT, Rules

CLASSES = ("starter-guide", "candidate-portable-repro", "lab-replay", "record-capsule",
           "research-status", "archived")
AUDIENCES = frozenset({"beginner", "intermediate", "expert", "researcher", "historical"})
COMPONENTS = ("platform_install", "model_download", "source_restore", "build", "launch",
              "validation", "patch_links", "hashes")


def catalog_entry(r: Rules, catalog: object, package: dict[str, Any]) -> dict[str, Any] | None:
    """The catalog's entry for `package` (by its id), or None with a finding."""
    guides = catalog.get("guides") if isinstance(catalog, dict) else None
    if not isinstance(catalog, dict) or catalog.get("format") != CATALOG_FORMAT:
        r.need(False, "catalog", f"catalog format must be {CATALOG_FORMAT!r}")
        return None
    if not r.need(isinstance(guides, list), "catalog", "catalog guides must be a list"):
        return None
    assert isinstance(guides, list)
    found = [g for g in guides if isinstance(g, dict) and g.get("id") == package.get("id")]
    r.need(len(found) == 1, "id", f"package id {package.get('id')!r} has "
                                  f"{len(found)} guide-catalog entries, not one")
    return found[0] if len(found) == 1 else None


def guide_class(r: Rules, entry: dict[str, Any]) -> tuple[str | None, list[str]]:
    """The derived class and the gates between it and `starter-guide`."""
    guide = entry.get("guide")
    stated, audience = entry.get("classification"), entry.get("audience")
    r.need(stated in CLASSES, "classification", f"{guide}: unknown classification {stated!r}")
    r.need(audience in AUDIENCES, "audience", f"{guide}: unknown audience {audience!r}")
    r.need(isinstance(entry.get("clean_host_tested"), bool), "clean_host_tested",
           f"{guide}: clean_host_tested must be boolean")
    components = entry.get("components")
    exact = isinstance(components, dict) and set(components) == set(COMPONENTS) and all(
        type(v) is bool for v in components.values())
    r.need(exact, "components", f"{guide}: components must contain exactly "
                                f"{sorted(COMPONENTS)}, each boolean")
    raw_missing = entry.get("missing")
    stated_missing = [m for m in raw_missing if isinstance(m, str) and m] \
        if isinstance(raw_missing, list) else []
    listed = isinstance(raw_missing, list) and len(stated_missing) == len(raw_missing)
    r.need(listed, "missing", f"{guide}: missing must be a list of non-empty strings")
    gates = _starter_gates(entry, components if exact else None, audience)
    failing = [name for name, holds in gates if not holds]
    missing = failing + stated_missing
    if not failing and not missing:
        return "starter-guide", []
    if stated == "starter-guide":
        for name in failing:
            r.need(False, "classification", f"{guide}: starter-guide requires {name}")
        return None, missing
    r.need(bool(missing), "missing", f"{guide}: non-starter guides must state at least one "
                                     "missing gate")
    return (stated if stated in CLASSES else None), missing


def _starter_gates(entry: dict[str, Any], components: dict[str, Any] | None,
                   audience: object) -> list[tuple[str, bool]]:
    lacking = [c for c in COMPONENTS if not (components or {}).get(c)]
    return [
        ("a clean-host replay (clean_host_tested)", entry.get("clean_host_tested") is True),
        ("a complete dependency closure (lacking: " + ", ".join(lacking) + ")", not lacking),
        (f"a beginner audience (not {audience})", audience == "beginner"),
    ]
