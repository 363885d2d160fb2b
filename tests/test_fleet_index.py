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


def test_two_homes_pull_the_same_records_into_one_index_at_once(
        tmp_path, database_url, signing_keys, hash_cache) -> None:
    """Two processes write the same records' rows (`Index.put`, what a pull does) at the
    same moment, round after round, in opposite orders: no primary-key error, no
    deadlock, and the rows end as the signed statements give them, once each."""
    import json

    from registry.seal import seal_run
    from registry.signing.keys import signing_key
    from registry.store.create import init_home
    from registry.store.index import open_index
    from registry.store.trust import genesis

    if database_url is None:
        pytest.skip("the shared index is PostgreSQL")
    home = init_home(tmp_path / "a" / ".registry")
    genesis(home, signing_key(signing_keys))
    captured = ROOT / "tests/data/cpu-runs/tiny-bf16-kv"
    import shutil

    ids = [seal_run(shutil.copytree(captured, tmp_path / f"run{i}"), home=home).id
           for i in range(3)]
    index = open_index(home)
    entries = index.entries(ids)
    assert sorted(entries) == sorted(ids)
    before = {rid: {t: sorted(map(repr, rows)) for t, rows in e.items()}
              for rid, e in entries.items()}
    rows_file = tmp_path / "entries.json"
    rows_file.write_text(json.dumps(list(entries.values())))
    rounds, start = 25, time.time() + 4
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-m", "tests.put_many", index.url,
                               str(rows_file), str(start), str(rounds), "0.15", *order],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for order in ([], ["reverse"])]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        assert out.split() == [str(n) for n in range(rounds)]
    after = {rid: {t: sorted(map(repr, rows)) for t, rows in e.items()}
             for rid, e in open_index(home).entries(ids).items()}
    assert after == before  # every row once, as sealed
    assert sorted(open_index(home).commits()) == sorted(ids)
