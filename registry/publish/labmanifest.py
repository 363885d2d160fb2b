"""The lab's recipe publication manifest (`neural.download.recipe-publication.v2`),
checked by the rules of its `tools/validate-recipe-publication.py` @d8a01013, with its
messages: the format and status, the guide, the repository's source commit, build
scripts and immutable inputs each bound by sha256, upstream sources at full commits over
https, the release and its assets (unique names, kinds, https URLs ending in the name,
sha256, a positive size), section hashes of each critical binary, the toolchain and its
inventories, the validation gates and evidence; and, once `published`, every required
release kind, every gate true, a source-patch asset for each immutable input and a UTC
`remote_verified_at`.

The lab's code checks the top-level `repository` and `release` only (its `chains` and
`chain_releases` are not read by v2), and so does this.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from registry.base.canonical import is_git_sha, is_sha256
from registry.publish.labrules import MANIFEST_FORMAT, LabCheck, Rules

UTC_SECOND = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
REQUIRED_RELEASE_KINDS = frozenset({"build-log", "checksum-manifest", "wheel", "xpu-extension",
                                    "gdn-library", "runtime-inventory", "toolchain-inventory"})
REQUIRED_SECTIONS = frozenset({".text", ".rodata", ".data", "OFFLOAD_DEVICE_CODE"})
CRITICAL_KINDS = frozenset({"xpu-extension", "gdn-library"})
GATES = ("clean_source_build", "runtime_smoke", "quality_gate")
# the lab's field names (one of which is an engine's name: a key of its JSON, not an
# engine this module talks to)
TOOLCHAIN = tuple("compiler python torch vllm vllm_xpu_kernels_source_version".split())  # noqa: SIM905
# What the lab's validator reads from its clone; named, never passed, here.
IN_CLONE = [
    "the manifest, guide, build scripts, immutable inputs and quality evidence are "
    "tracked by git and exist",
    "repository.source_commit is in the clone, and each build script and immutable input "
    "hashes as pinned at that commit and in the worktree",
    "build scripts name no originating-host path; each ${repo_root}/ and ${script_dir}/ "
    "file they reference is tracked; each X=path beside X_sha256= hashes to it",
    "quality evidence files hash as pinned",
]


def check_manifest(path: Path, raw: object) -> LabCheck:
    label = path.name
    r = Rules()
    m: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if not r.need(isinstance(raw, dict), label, f"{label}: not a JSON object"):
        return _done(path, m, r)
    r.need(m.get("format") == MANIFEST_FORMAT, "format",
           f"{label}: format must be {MANIFEST_FORMAT!r}")
    r.need(m.get("publication_status") in {"draft", "published"}, "publication_status",
           f"{label}: publication_status must be 'draft' or 'published'")
    _repo_path(r, m.get("guide"), f"{label}.guide")
    inputs = _repository(r, label, m.get("repository"))
    _sources(r, label, m.get("source_repositories"))
    release = _dict(r, m.get("release"), f"{label}.release")
    kinds, valid = _release(r, label, release)
    _binaries(r, label, m.get("binary_sections"), kinds)
    _toolchain(r, label, m.get("toolchain"), kinds)
    validation = _dict(r, m.get("validation"), f"{label}.validation")
    _validation(r, label, validation, kinds)
    if m.get("publication_status") == "published":
        _published(r, label, release, validation, inputs, kinds, valid)
    return _done(path, m, r)


def _done(path: Path, m: dict[str, Any], r: Rules) -> LabCheck:
    status = m.get("publication_status")
    return LabCheck(kind="lab-publication-manifest", path=str(path),
                    format=m.get("format") if isinstance(m.get("format"), str) else None,
                    status=status if isinstance(status, str) else None,
                    passed=not r.findings, not_checked=IN_CLONE,
                    findings=[f.model_copy(update={"rule": f.rule.removeprefix(path.name + ".")})
                              for f in r.findings])


def _dict(r: Rules, value: object, label: str) -> dict[str, Any]:
    r.need(isinstance(value, dict), label, f"{label} must be an object")
    return value if isinstance(value, dict) else {}


def _repo_path(r: Rules, value: object, label: str) -> None:
    if not r.need(isinstance(value, str) and bool(value), label,
                  f"{label} must be a non-empty repository-relative path"):
        return
    pure = PurePosixPath(str(value))
    r.need(not pure.is_absolute() and ".." not in pure.parts, label,
           f"{label} must stay inside the repository: {value!r}")


def _digest(r: Rules, value: object, label: str) -> None:
    r.need(isinstance(value, str) and is_sha256(value), label,
           f"{label} must be a lowercase SHA-256 digest")


def _bound_files(r: Rules, items: object, label: str, what: str) -> list[dict[str, Any]]:
    """A non-empty list of {path, sha256}."""
    if not r.need(isinstance(items, list) and bool(items), label,
                  f"{label} must be a non-empty list"):
        return []
    assert isinstance(items, list)
    out = []
    for i, item in enumerate(items):
        item_label = f"{label}[{i}]"
        if not r.need(isinstance(item, dict), item_label, f"{item_label} must {what}"):
            continue
        _repo_path(r, item.get("path"), f"{item_label}.path")
        _digest(r, item.get("sha256"), f"{item_label}.sha256")
        out.append(item)
    return out


def _repository(r: Rules, label: str, value: object) -> list[dict[str, Any]]:
    repo = _dict(r, value, f"{label}.repository")
    commit = repo.get("source_commit")
    r.need(isinstance(commit, str) and is_git_sha(commit),
           f"{label}.repository.source_commit",
           f"{label}.repository.source_commit must be a full 40-character Git commit")
    _bound_files(r, repo.get("build_scripts"), f"{label}.repository.build_scripts",
                 "bind path and sha256")
    return _bound_files(r, repo.get("immutable_inputs"), f"{label}.repository.immutable_inputs",
                        "be an object")


def _sources(r: Rules, label: str, value: object) -> None:
    where = f"{label}.source_repositories"
    if not r.need(isinstance(value, list) and bool(value), where,
                  f"{where} must be a non-empty list"):
        return
    assert isinstance(value, list)
    for i, source in enumerate(value):
        s = f"{where}[{i}]"
        if not r.need(isinstance(source, dict), s, f"{s} must be an object"):
            continue
        url, commit = source.get("url"), source.get("commit")
        r.need(isinstance(url, str) and url.startswith("https://"), f"{s}.url",
               f"{s}.url must be an HTTPS URL")
        r.need(isinstance(commit, str) and is_git_sha(commit), f"{s}.commit",
               f"{s}.commit must be a full 40-character Git commit")


def _release(r: Rules, label: str, release: dict[str, Any]
             ) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Each asset name's kind, and the assets every field of which is valid."""
    where = f"{label}.release"
    tag, url = release.get("tag"), release.get("url")
    r.need(isinstance(tag, str) and bool(tag), f"{where}.tag",
           f"{where}.tag must be a non-empty immutable tag")
    r.need(isinstance(url, str) and url.startswith("https://"), f"{where}.url",
           f"{where}.url must be an HTTPS URL")
    assets = release.get("assets")
    kinds: dict[str, str] = {}
    valid: list[dict[str, Any]] = []
    if not r.need(isinstance(assets, list) and bool(assets), f"{where}.assets",
                  f"{where}.assets must be a non-empty list"):
        return kinds, valid
    assert isinstance(assets, list)
    names: set[str] = set()
    for i, asset in enumerate(assets):
        a = f"{where}.assets[{i}]"
        if r.need(isinstance(asset, dict), a, f"{a} must be an object") and \
                _asset(r, a, asset, names, kinds):
            valid.append(asset)
    return kinds, valid


def _asset(r: Rules, a: str, asset: dict[str, Any], names: set[str],
           kinds: dict[str, str]) -> bool:
    name, kind, url = asset.get("name"), asset.get("kind"), asset.get("url")
    digest, size = asset.get("sha256"), asset.get("size")
    named = isinstance(name, str) and bool(name)
    if r.need(named, f"{a}.name", f"{a}.name must be a non-empty string"):
        r.need(name not in names, f"{a}.name", f"{a}: duplicate asset name {name!r}")
        names.add(str(name))
    if r.need(isinstance(kind, str) and bool(kind), f"{a}.kind",
              f"{a}.kind must be a non-empty string") and named:
        kinds[str(name)] = str(kind)
    https = isinstance(url, str) and url.startswith("https://")
    if r.need(https, f"{a}.url", f"{a}.url must be an HTTPS URL") and named:
        basename = unquote(PurePosixPath(urlparse(str(url)).path).name)
        r.need(basename == name, f"{a}.url", f"{a}.url basename does not match asset name "
                                             f"{name!r}")
    _digest(r, digest, f"{a}.sha256")
    sized = isinstance(size, int) and not isinstance(size, bool) and size > 0
    r.need(sized, f"{a}.size", f"{a}.size must be a positive integer")
    bare = named and PurePosixPath(str(name)).name == name
    if named and not bare:
        r.need(False, f"{a}.name", f"{a}.name must not contain a path")
    return bool(bare and https and isinstance(digest, str) and is_sha256(digest)
                and sized and isinstance(kind, str) and kind)


def _binaries(r: Rules, label: str, value: object, kinds: dict[str, str]) -> None:
    where = f"{label}.binary_sections"
    ok = r.need(isinstance(value, dict) and bool(value), where,
                f"{where} must be a non-empty object")
    sections: dict[str, Any] = value if isinstance(value, dict) and ok else {}
    for name, binary in sections.items():
        b = f"{where}[{name!r}]"
        if r.need(name in kinds, b, f"{b}: binary is not a named release asset"):
            r.need(kinds[name] in CRITICAL_KINDS, b,
                   f"{b}: release asset is not a critical binary kind")
        if not r.need(isinstance(binary, dict), b, f"{b} must be an object"):
            continue
        r.need(binary.get("runpath") == "$ORIGIN", f"{b}.runpath", f"{b}.runpath must be '$ORIGIN'")
        hashes = binary.get("sections")
        if not r.need(isinstance(hashes, dict), f"{b}.sections", f"{b}.sections must be an object"):
            continue
        lacking = sorted(REQUIRED_SECTIONS - set(hashes))
        r.need(not lacking, f"{b}.sections", f"{b}: missing section hashes {lacking}")
        for section, digest in hashes.items():
            r.need(isinstance(digest, str) and is_sha256(digest),
                   f"{b}.sections", f"{b}.sections[{section!r}] must be a SHA-256 digest")
    for name, kind in kinds.items():
        r.need(kind not in CRITICAL_KINDS or name in sections, where,
               f"{label}: critical binary asset {name!r} lacks section closure")


def _toolchain(r: Rules, label: str, value: object, kinds: dict[str, str]) -> None:
    where = f"{label}.toolchain"
    tools = _dict(r, value, where)
    for field in TOOLCHAIN:
        v = tools.get(field)
        r.need(isinstance(v, str) and bool(v), f"{where}.{field}",
               f"{where}.{field} must be a non-empty string")
    for field, kind in (("oneapi_inventory_asset", "toolchain-inventory"),
                        ("runtime_inventory_asset", "runtime-inventory")):
        name = tools.get(field)
        r.need(isinstance(name, str) and kinds.get(name) == kind, f"{where}.{field}",
               f"{where}.{field} must name a {kind!r} release asset")


def _validation(r: Rules, label: str, validation: dict[str, Any], kinds: dict[str, str]) -> None:
    where = f"{label}.validation"
    for field in GATES:
        r.need(isinstance(validation.get(field), bool), f"{where}.{field}",
               f"{where}.{field} must be boolean")
    log = validation.get("build_log_asset")
    r.need(isinstance(log, str) and kinds.get(log) == "build-log", f"{where}.build_log_asset",
           f"{where}.build_log_asset must name the successful build-log asset")
    _bound_files(r, validation.get("quality_evidence"), f"{where}.quality_evidence",
                 "bind path and sha256")


def _published(r: Rules, label: str, release: dict[str, Any], validation: dict[str, Any],
               inputs: list[dict[str, Any]], kinds: dict[str, str],
               valid: list[dict[str, Any]]) -> None:
    lacking = sorted(REQUIRED_RELEASE_KINDS - set(kinds.values()))
    r.need(not lacking, "release.assets", f"{label}: published recipe lacks release kinds "
                                          f"{lacking}")
    r.need(all(validation.get(g) is True for g in GATES), "validation",
           f"{label}: published recipe requires all validation gates to pass")
    patches = {(a["name"], a["sha256"]) for a in valid if a["kind"] == "source-patch"}
    for item in inputs:
        if isinstance(item.get("path"), str):
            wanted = (PurePosixPath(item["path"]).name, item.get("sha256"))
            r.need(wanted in patches, "repository.immutable_inputs",
                   f"{label}: immutable input {item['path']!r} lacks matching source-patch asset")
    stamp = release.get("remote_verified_at")
    r.need(isinstance(stamp, str) and bool(UTC_SECOND.fullmatch(stamp)),
           "release.remote_verified_at",
           f"{label}: published release requires remote_verified_at in UTC")
