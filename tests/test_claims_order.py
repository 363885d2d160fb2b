"""Issue 34: a claim's events replay in the ledger's signed (commit) order, never by the
time an event states; a final state stays final; a second move from one event is a
conflict shown as text; a compromised key's claims are shown untrusted while every
other claim reads and advances. Attacks as a member makes them: a hand-written event,
signed with a member key, committed beside the others."""

from __future__ import annotations

import json

from registry.base.canonical import canonical_bytes, sha256_hex
from registry.claims.models import EVENT_PAYLOAD_TYPE, ClaimEvent, EventKind, State
from registry.signing import dsse
from registry.signing.keys import create_key, signing_key
from registry.store.ledger import Ledger
from tests.test_claims import CLAIM, SQLITE, ok, records, reproduce  # noqa: F401

pytestmark = SQLITE


def forge(home, claim: str, previous: str, state: State, seq: int = 1,
          time: str = "2000-01-01T00:00:00Z") -> str:
    """A member's hand-written event: canonical JSON, DSSE-signed with the member's key,
    committed as one more ledger file (what any member can do without the command)."""
    signer = signing_key()
    event = ClaimEvent(claim=claim, seq=seq, previous=previous, kind=EventKind.advanced,
                       time=time, actor=signer[0], state=state)
    data = canonical_bytes(event)
    envelope = dsse.envelope_bytes(dsse.sign(data, signer[0], signer[1], EVENT_PAYLOAD_TYPE))
    Ledger(home.ledger).commit({f"claims/{claim}/{sha256_hex(data)}.json": envelope},
                               "an old event", signer)
    return sha256_hex(data)


def test_a_backdated_event_cannot_undo_a_refutation(cli, store_home, records) -> None:  # noqa: F811
    slow = reproduce(store_home, records["a"], records["c"])
    ok(cli("claim", "add", "tiny", "--value", "1", *CLAIM))
    refuted = ok(cli("claim", "advance", "tiny", "--to", "refuted", "--verification", slow,
                     "--json"))
    forged = forge(store_home, "tiny", refuted["events"][0], State.queued)
    shown = ok(cli("claim", "show", "tiny", "--json"))
    assert shown["status"] == "refuted" and shown["events"] == refuted["events"]
    [conflict] = shown["conflicts"]
    assert conflict["id"] == forged and "refuted, which is final" in conflict["reason"]
    text = cli("claim", "show", "tiny")
    assert text.exit_code == 0 and "conflicts" in text.stdout and forged[:12] in text.stdout
    again = cli("claim", "advance", "tiny", "--to", "queued")
    assert again.exit_code == 6 and "no move from refuted" in again.stderr


def test_the_ledger_order_decides_a_fork_not_the_stated_time(cli, store_home) -> None:
    """Two moves from the created event: the one committed first is applied, whatever
    the other's seq and time say; the other is a conflict, shown as text."""
    made = ok(cli("claim", "add", "tiny", "--value", "1", *CLAIM, "--json"))
    ok(cli("claim", "advance", "tiny", "--to", "queued"))
    forged = forge(store_home, "tiny", made["events"][0], State.reproducing)
    shown = ok(cli("claim", "show", "tiny", "--json"))
    assert shown["status"] == "queued"
    [conflict] = shown["conflicts"]
    assert conflict["id"] == forged and "a second move from event" in conflict["reason"]
    text = cli("claim", "show", "tiny").stdout
    assert "a second move from event" in text
    assert ok(cli("claim", "advance", "tiny", "--to", "reproducing", "--json"))[
        "status"] == "reproducing"


def test_a_compromised_key_marks_its_claims_and_locks_no_other(
        cli, store_home, tmp_path, make_run, seal_run_dir, monkeypatch) -> None:
    other = create_key(tmp_path / "colleague")
    (tmp_path / "c.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == 0
    seal_run_dir(make_run("theirs"), signer=signing_key(tmp_path / "colleague"))
    ok(cli("claim", "add", "mine", "--value", "1", *CLAIM))
    with monkeypatch.context() as m:
        m.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "colleague"))
        ok(cli("claim", "add", "theirs", "--value", "2", *CLAIM))
        ok(cli("claim", "advance", "mine", "--to", "queued"))  # theirs, on my claim
    r = cli("keys", "revoke", other.keyid[:12], "--reason", "laptop stolen", "--compromised")
    assert r.exit_code == 0, r.stderr
    listed = ok(cli("claim", "list", "--json"))
    status = {c["id"]: c["status"] for c in listed}
    assert status["mine"] == "submitted"  # the compromised key's move is not applied
    assert status["theirs"].startswith("untrusted")
    mine = ok(cli("claim", "show", "mine", "--json"))
    [move] = mine["untrusted"]
    assert "laptop stolen" in move["reason"] or "revoked" in move["reason"]
    theirs = ok(cli("claim", "show", "theirs", "--json"))
    assert theirs["trust"] == "untrusted" and "revoked" in theirs["trust_reason"]
    assert "untrusted" in cli("claim", "show", "theirs").stdout
    assert ok(cli("claim", "advance", "mine", "--to", "queued", "--json"))["status"] == "queued"
    refused = cli("claim", "advance", "theirs", "--to", "queued")
    assert refused.exit_code == 6 and "untrusted" in refused.stderr
    assert "Traceback" not in cli("claim", "list").stderr
    assert json.loads(cli("claim", "list", "--json").stdout)
