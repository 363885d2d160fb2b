"""Two homes writing one PostgreSQL index at the same moment (as two fleet hosts do when
the team's index is shared): every record of both is indexed once, visible, and read
back as signed; nothing one home writes is dropped or hidden by the other."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.postgres
N = 6


def test_two_homes_seal_into_one_index_at_once(tmp_path, database_url, signing_keys,
                                              hash_cache) -> None:
    from registry.signing.keys import signing_key
    from registry.signing.signed import Trust
    from registry.store.create import init_home
    from registry.store.index import open_index
    from registry.store.query import find_records
    from registry.store.trust import genesis

    if database_url is None:
        pytest.skip("the shared index is PostgreSQL")
    homes = []
    for name in ("a", "b"):
        home = init_home(tmp_path / name / ".registry")
        genesis(home, signing_key(signing_keys))
        homes.append(home)
    start = time.time() + 4  # both processes loaded, then they seal at the same moment
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.seal_many", str(h.root), str(N),
                               str(start)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for h in homes]
    sealed = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        sealed.append(out.split())
    assert [len(s) for s in sealed] == [N, N]
    index = open_index(homes[0])
    commits = index.commits()  # the visible rows
    assert sorted(commits) == sorted(sealed[0] + sealed[1]), "a row was lost or hidden"
    assert index.pending() == []
    for home, own in zip(homes, sealed, strict=True):
        mine = {r.id: r for r in find_records(home) if r.id in own}
        assert sorted(mine) == sorted(own)  # each home reads its own back, as signed
        assert all(r.trust is Trust.verified for r in mine.values())
