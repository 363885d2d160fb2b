"""A run directory sealed before: the record whose signed engine log and benchmark rows
are byte for byte this run's, so sealing the same run again returns that record
rather than a second one (`registry seal --again` makes another deliberately)."""

from __future__ import annotations

from pathlib import Path

from registry.formats import rundir
from registry.store.home import Home
from registry.store.writer import SealedRecord


def already_sealed(home: Home, run_dir: Path, parent: str | None = None) -> SealedRecord | None:
    """The committed record (not an import) that signed this run's `server.log` and
    `bench.json` digests with the same parent; each candidate's statement is used only
    if it still hashes to its id. None when the run has no rows: an engine-only run is
    sealed as often as asked."""
    from registry.store.query import statements_holding

    if not (run_dir / rundir.BENCH).is_file():
        return None
    wanted = {name: _sealed_digest(run_dir / name) for name in (rundir.SERVER_LOG, rundir.BENCH)}
    for row, statement in statements_holding(home, ["imported=false"],
                                             wanted[rundir.BENCH].encode()):
        digests = {s.name: s.sha256 for s in statement.subject}
        if statement.predicate.parent == parent and all(
                digests.get(name) == digest for name, digest in wanted.items()):
            return SealedRecord(id=row.id, ledger_commit=row.ledger_commit or "",
                                summary=row.summary, signer=row.signer or "",
                                artifacts=len(statement.subject), bytes=0, already=True)
    return None


def _sealed_digest(path: Path) -> str:
    """The digest a seal gives the file: of its bytes with any secret redacted."""
    from registry.base.canonical import sha256_hex
    from registry.base.hashing import sha256_file
    from registry.base.secrets import redact_bytes, scan_file

    if not scan_file(path, path.name):
        return sha256_file(path)
    return sha256_hex(redact_bytes(path.read_bytes(), path.name)[0])
