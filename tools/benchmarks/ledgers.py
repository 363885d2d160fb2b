"""Benchmark ledgers: a home with a key, and N records with one signed commit each,
built fast but exactly as `seal` would leave them: records go in through
`git fast-import` (which computes the trees), then each commit is rewritten with its
`Registry-Signature` over tree, parents, author, committer and message."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from registry.formats.identity import Evidence, ResolvedField, ResolvedIdentity, Status  # noqa: E402
from registry.formats.record import (  # noqa: E402
    Predicate,
    RunInfo,
    Statement,
    Subject,
    record_id,
    statement_bytes,
)
from registry.signing import dsse  # noqa: E402
from registry.signing.commits import PERSON, signed_message  # noqa: E402
from registry.signing.keys import Signer, create_key, signing_key  # noqa: E402
from registry.store.create import init_home  # noqa: E402
from registry.store.home import Home  # noqa: E402
from registry.store.ledger import BRANCH, Ledger, record_folder  # noqa: E402
from registry.store.objects import ObjectStore  # noqa: E402
from registry.store.trust import genesis  # noqa: E402


def identity(i: int) -> ResolvedIdentity:
    def field(value: object) -> ResolvedField:
        return ResolvedField(declared=value, resolved=value, status=Status.confirmed,
                             evidence=[Evidence(source="server.log", line=i % 500 + 1, text="...")])

    return ResolvedIdentity(fields={
        "model.architecture": field("LlamaForCausalLM"),
        "precision.weights": field("bfloat16"),
        "precision.kv_cache": field("fp8_e4m3" if i % 4 == 0 else "bfloat16"),
        "parallel.tensor": field(1 + i % 4),
        "engine.version": field("0.32.0"),
    })


def new_home(folder: Path) -> Home:
    os.environ["REGISTRY_KEYS_DIR"] = str(folder / "keys")
    os.environ.pop("REGISTRY_DATABASE_URL", None)
    create_key(folder / "keys")
    home = init_home(folder / ".registry")
    genesis(home, signing_key())
    os.environ["REGISTRY_HOME"] = str(home.root)
    return home


def fill(home: Home, n: int, payload: int = 0) -> None:
    """n records, one signed commit each; with `payload`, each also names an object of
    that many random bytes (objects to transfer)."""
    signer = signing_key()
    keyid, key = signer
    store = ObjectStore(home.objects)
    ledger = Ledger(home.ledger)
    parent = ledger.head()
    stream = [f"reset {BRANCH}\nfrom {parent}\n"]
    for i in range(n):
        log = store.put_bytes(f"INFO engine started, run {i}\n".encode())
        subjects = [Subject(name="server.log", digest={"sha256": log.sha256})]
        if payload:
            rows = store.put_bytes(os.urandom(payload))
            subjects.append(Subject(name="rows.bin", digest={"sha256": rows.sha256}))
        statement = Statement(
            subject=subjects,
            predicate=Predicate(
                recipe={"name": f"recipe-{i % 7}", "lane": f"lane-{i % 5}"}, identity=identity(i),
                run=RunInfo(state="complete", sealed_at=f"2026-07-{1 + i % 28:02d}T00:00:{i:08d}"),
                artifacts={"server.log": "server.log"}))
        data = statement_bytes(statement)
        rid = record_id(data)
        envelope = dsse.envelope_bytes(dsse.sign(data, keyid, key))
        stream.append(f"commit {BRANCH}\ncommitter x <x> 0 +0000\ndata 1\n{i % 10}\n")
        for name, blob in (("statement.json", data), ("envelope.json", envelope)):
            stream.append(f"M 100644 inline {record_folder(rid)}/{name}\ndata {len(blob)}\n")
            stream.append(blob.decode() + "\n")
    subprocess.run(["git", "-C", str(home.ledger), "fast-import", "--quiet", "--force"],
                   input="".join(stream).encode(), check=True)
    trees = subprocess.run(["git", "-C", str(home.ledger), "log", "--reverse", "--format=%T",
                            f"{parent}..{BRANCH}"], capture_output=True, text=True,
                           check=True).stdout.split()
    head = _sign_chain(home.ledger, parent, trees, signer)
    subprocess.run(["git", "-C", str(home.ledger), "update-ref", BRANCH, head], check=True)
    subprocess.run(["git", "-C", str(home.ledger), "reset", "-q", "--hard"], check=True)


def _sign_chain(repo: Path, parent: str | None, trees: list[str], signer: Signer) -> str:
    """Signed commits over `trees`, written as loose objects; returns the last id."""
    person = f"{PERSON} 1700000000 +0000"
    for tree in trees:
        parents = [parent] if parent else []
        message = signed_message("benchmark record", tree, parents, person, signer)
        body = (f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
                + f"author {person}\ncommitter {person}\n\n{message}").encode()
        raw = b"commit %d\0" % len(body) + body
        sha = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        path = repo / ".git" / "objects" / sha[:2] / sha[2:]
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(zlib.compress(raw, 1))
        parent = sha
    return parent or ""
