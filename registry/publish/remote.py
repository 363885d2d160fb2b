"""A package's upstreams fetched again: each release asset downloaded (http or https
only, no further than its declared size) and compared by size and sha256; each git
upstream fetched into a throwaway bare repository under the same hardened git as the
ledger (no hook, filter or command of anyone else's runs), the commit looked up there,
and a tag, when the package names one, required to still name that commit.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from registry.publish.package import Asset, Finding, Package, Upstream

TIMEOUT_S = 60
CHUNK = 1 << 20


def check_remote(package: Package) -> list[Finding]:
    out: list[Finding] = []
    for asset in package.assets:
        out += _asset(asset)
    for upstream in [s for s in [package.engine.source] if s and s.url and s.commit]:
        out += _upstream(upstream)
    return out


def _asset(asset: Asset) -> list[Finding]:
    if not asset.url.startswith(("http://", "https://")):
        return [Finding(code="asset_url_refused", detail=f"{asset.name}: {asset.url}")]
    digest, size = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(asset.url, timeout=TIMEOUT_S) as response:
            while chunk := response.read(CHUNK):
                size += len(chunk)
                if size > asset.size:
                    return [Finding(code="asset_size_mismatch",
                                    detail=f"{asset.name}: more than {asset.size} bytes")]
                digest.update(chunk)
    except (urllib.error.URLError, OSError) as e:
        return [Finding(code="asset_unreachable", detail=f"{asset.name}: {e}")]
    if size != asset.size:
        return [Finding(code="asset_size_mismatch",
                        detail=f"{asset.name}: {size} bytes, the package says {asset.size}")]
    if digest.hexdigest() != asset.sha256:
        return [Finding(code="asset_hash_mismatch",
                        detail=f"{asset.name}: sha256 {digest.hexdigest()}")]
    return []


def _upstream(upstream: Upstream) -> list[Finding]:
    assert upstream.url and upstream.commit
    with tempfile.TemporaryDirectory(prefix="registry-upstream-") as temp:
        repo = Path(temp) / "repo.git"
        if _git(Path(temp), "init", "-q", "--bare", str(repo)) is None or _git(
                repo, "fetch", "-q", "--no-tags", upstream.url,
                "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*") is None:
            return [Finding(code="upstream_unreachable",
                            detail=f"{upstream.name}: {upstream.url} cannot be fetched")]
        if _git(repo, "cat-file", "-e", f"{upstream.commit}^{{commit}}") is None:
            return [Finding(code="upstream_commit_missing",
                            detail=f"{upstream.name}: {upstream.url} has no commit "
                                   f"{upstream.commit}")]
        if upstream.tag:
            named = _git(repo, "rev-parse", f"refs/tags/{upstream.tag}^{{commit}}")
            if named != upstream.commit:
                return [Finding(code="upstream_tag_moved",
                                detail=f"{upstream.name}: tag {upstream.tag} names "
                                       f"{named or 'nothing'}, not {upstream.commit}")]
    return []


def _git(repo: Path, *args: str) -> str | None:
    """One git call under the ledger's hardened configuration; stdout, or None."""
    from registry.store.git import git_args, git_env

    done = subprocess.run(git_args(repo, *args), capture_output=True, env=git_env(),
                          timeout=TIMEOUT_S * 5, check=False)
    return done.stdout.decode(errors="replace").strip() if done.returncode == 0 else None
