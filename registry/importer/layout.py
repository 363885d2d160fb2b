"""What a capsule holds, found by file names: its manifest, and per arm (one run) the
engine log, raw rows, summaries, launch, identity and status files.

An arm is a folder, or a run id shared by files in one folder (`<run>-launch.json`,
`<run>-server.log`), that holds a log, rows, a summary or a launch file. `run/`,
`data/`, `evidence/` and `configs/` folders belong to the arm above them (a lab packet's
`configs/server-args.json` launched the run whose log is in `evidence/`). Status and
identity files belong to the arm whose folder holds them, else to every arm. A capsule
with no arm is one run at its root. Claims (`claims/*.json`, a packet's `claim.json`)
belong to every arm; a capsule of claims alone is imported too (a record kept as its
claims: unproven, its figures published). Lab harness logs (`validate-<stamp>.log`,
`<name>-server-<run>.log`) are logs. A `*-summary.json` is a run's summary only when it
holds a figure a run summary carries (`summary`, `primary_metric`,
`tok_s_1_100_after_ttft`, ...): a quality decision named `...-summary.json` is not a
run. A screen's receipt (`<stamp>-<name>-screen.json`, its medians in a block per suite)
is a summary too.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path, PurePosixPath

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.importer.manifest import Manifest, find_manifest, is_manifest_name
from registry.importer.published import engine_figures
from registry.importer.walk import capsule_files, inside


class Role(StrEnum):
    log = "log"
    rows = "rows"
    summary = "summary"
    launch = "launch"
    identity = "identity"
    status = "status"
    metrics_before = "metrics-before"
    metrics_after = "metrics-after"
    claim = "claim"


LOG_NAMES = ("server.log", "server.stdout.log", "vllm.log", "engine.log")
# (role, pattern on the file name); a run-id prefix `<run>-` is allowed where it says so
PATTERNS: list[tuple[Role, re.Pattern[str]]] = [(role, re.compile(p)) for role, p in [
    (Role.log, r"(?:(?P<run>.+?)-)?server(?:\.stdout)?\.log|vllm\.log|engine\.log"
               r"|[\w.]+-server-[\w.-]+\.log|validate-[\w.-]+\.log"),
    (Role.rows, r"(?:(?P<run>.+?)-)?(?:bench|strict-performance)\.json"),
    (Role.summary, r"summary(?:-[\w.-]+)?\.json|(?P<run>.+?)-summary\.json"
                   r"|[\w.-]+-summary-\d{8}\.json|[\w.-]+-screen\.json"),
    (Role.launch, r"(?:(?P<run>.+?)-)?(?:launch(?:-env|-args)?|server-args)\.json"),
    (Role.identity, r".+\.env|identity\.(?:txt|json)|(?P<run>.+?)-(?:strict-)?identity\.json"),
    (Role.status, r"status\.(?:txt|json)|verdict\.json|result\.json|runner\.exit-code"
                  r"|qualification-decision\.json|(?P<run>.+?)-(?:state|verdict)\.json"),
    (Role.metrics_before, r"metrics-before(?:-suite)?\.prom"),
    (Role.metrics_after, r"metrics-after(?:-suite)?\.prom"),
]]
ARM_ROLES = {Role.log, Role.rows, Role.summary, Role.launch}
# what makes a folder a capsule: a run's own files, or the figures a claim publishes (a
# record kept as its claims: imported unproven, its figures beside nothing re-derived)
EVIDENCE_ROLES = (Role.log, Role.rows, Role.summary, Role.launch, Role.status, Role.claim)
INNER = {"run", "data", "evidence", "configs"}  # folders that belong to the arm above them


class Arm(Frozen):
    name: str = Field(description="folder (or folder/run id) within the capsule; '' = root")
    folder: str
    run: str = Field("", description="run id shared by the arm's file names, if any")
    files: dict[Role, list[str]] = Field(description="role -> capsule paths, best first")

    def first(self, role: Role) -> str | None:
        return next(iter(self.files.get(role, [])), None)


class Layout(Frozen):
    files: list[str]
    manifest: Manifest | None
    arms: list[Arm]

    def claims_only(self) -> bool:
        """Nothing a run leaves, only the figures claims publish: a claim without rows."""
        return not any(role in arm.files for arm in self.arms for role in EVIDENCE_ROLES
                       if role is not Role.claim)

    def describe(self) -> str:
        roles = sorted({r.value for a in self.arms for r in a.files})
        return (f"{len(self.files)} files; manifest: "
                f"{self.manifest.path if self.manifest else 'none'}; "
                f"found: {', '.join(roles) or 'nothing a run leaves'}")


def detect(capsule: Path, *, log: Path | None = None, bench: Path | None = None,
           manifest: Path | None = None) -> Layout:
    files = capsule_files(capsule)
    given = {Role.log: log, Role.rows: bench}
    pointed = {role: inside(capsule, p, f"--{'bench' if role is Role.rows else 'log'}")
               for role, p in given.items() if p is not None}
    found = find_manifest(capsule, files, inside(capsule, manifest, "--manifest")
                          if manifest else None)
    arms = _arms([f for f in files if not _other_summary(capsule, f)
                  and not _engine_table(capsule, f)], pointed)
    if not any(role in arm.files for arm in arms for role in EVIDENCE_ROLES) \
            and not engine_figures(capsule, files):  # an engine's benchmark table alone
        raise InvalidInput(
            f"{capsule}: no run evidence found ({len(files)} files; manifest: "
            f"{found.path if found else 'none'}); missing: an engine log (server.log, "
            f"*-server.log), rows (bench.json), a summary, a launch, a status or a claim file",
            hint="point at them: registry import CAPSULE --log FILE --bench FILE")
    return Layout(files=files, manifest=found, arms=arms)


def _arms(files: list[str], pointed: dict[Role, str]) -> list[Arm]:
    groups: dict[tuple[str, str], dict[Role, list[str]]] = {}
    loose: list[tuple[str, str, Role, str]] = []  # status/identity/claims: placed after arms
    for name in files:
        path = PurePosixPath(name)
        if is_manifest_name(path.name):
            continue
        role, run = _role(path)
        if role is None or name in pointed.values():
            continue
        folder = _arm_folder(path.parent)
        if role in ARM_ROLES:
            groups.setdefault((folder, run or ""), {}).setdefault(role, []).append(name)
        else:
            loose.append((folder, run or "", role, name))
    if pointed:  # files named by hand make one arm: the capsule's root
        launches = [n for roles in groups.values() for n in roles.get(Role.launch, [])]
        groups = {("", ""): {r: [p] for r, p in pointed.items()}}
        if len(launches) == 1:  # the capsule's one launch file is that arm's
            groups[("", "")][Role.launch] = launches
    if not groups:
        groups[("", "")] = {}
    for folder, run, role, name in loose:
        owners = [k for k in groups if _within(folder, k[0])] or list(groups)
        owners = [k for k in owners if k[0] == folder] or owners
        owners = [k for k in owners if k[1] == run] or owners
        for key in owners:
            groups[key].setdefault(role, []).append(name)
    return [Arm(name=_arm_name(folder, run), folder=folder, run=run,
                files={r: sorted(v, key=_preference) for r, v in roles.items()})
            for (folder, run), roles in sorted(groups.items())]


def _engine_table(capsule: Path, name: str) -> bool:
    """A file named like the lab's rows that an engine reads as its own benchmark tool's
    table (`llama-bench -o json > llama-bench.json`): published figures, not rows."""
    from registry.engines.plugin import plugins

    if _role(PurePosixPath(name))[0] is not Role.rows:
        return False
    return any(p.published_figures(capsule / name, name) for p in plugins().values())


def _other_summary(capsule: Path, name: str) -> bool:
    """A file named like a summary that holds none of a run summary's figures."""
    from registry.importer.published import SCALARS, SERIES, figure_blocks
    from registry.importer.walk import load_json

    if _role(PurePosixPath(name))[0] is not Role.summary:
        return False
    data = load_json(capsule / name)
    return not (isinstance(data, dict) and ({"summary", *SERIES, *SCALARS} & set(data)
                                            or figure_blocks(data)))


def _role(path: PurePosixPath) -> tuple[Role | None, str | None]:
    if (path.parent.name == "claims" and path.suffix == ".json") or path.name == "claim.json":
        return Role.claim, None
    for role, pattern in PATTERNS:
        m = pattern.fullmatch(path.name)
        if m:
            return role, m.groupdict().get("run")
    return None, None


def _arm_folder(folder: PurePosixPath) -> str:
    while folder.name in INNER:
        folder = folder.parent
    return "" if str(folder) == "." else folder.as_posix()


def _within(folder: str, arm: str) -> bool:
    """`folder` is the arm's, inside it, or above it (shared)."""
    return "" in (arm, folder) or folder == arm or folder.startswith(arm + "/") or \
        arm.startswith(folder + "/")


def _arm_name(folder: str, run: str) -> str:
    return "/".join(p for p in (folder, run) if p)


def _preference(name: str) -> tuple[int, str]:
    """server.log before server.stdout.log before other logs; otherwise by name."""
    base = PurePosixPath(name).name
    return (LOG_NAMES.index(base) if base in LOG_NAMES else len(LOG_NAMES), name)
