"""The keyring's life: trust, retire, revoke, rotate, pin, thresholds; what each does to
the records already sealed (docs/trust.md)."""

from __future__ import annotations

import json

import pytest

from registry.errors import ExitCode, NewerFormat, Refused
from registry.signing.failures import (
    Malformed,
    MissingVersion,
    Revoked,
    RolledBack,
    ThresholdNotMet,
)
from registry.signing.keyring import KeyEntry, Keyring, Pin, Role, sign_version, verify_chain
from registry.signing.keys import create_key, public_pem, signing_key
from registry.store.ledger import folder_at, record_folder
from registry.store.trust import current_keyring


def verify_all(cli) -> dict:
    r = cli("verify", "--all", "--json")
    assert "Traceback" not in r.stderr
    return {"code": r.exit_code, **json.loads(r.stdout)}


def test_a_colleague_trusted_by_the_root_can_seal(cli, store_home, tmp_path, make_run,
                                                   seal_run_dir, monkeypatch) -> None:
    other = create_key(tmp_path / "colleague")
    (tmp_path / "c.pub").write_text(other.public_pem)
    r = cli("keys", "trust", tmp_path / "c.pub")
    assert r.exit_code == 0 and other.keyid in r.stdout
    ring = current_keyring(store_home).current
    assert ring.version == 2 and Role.signer in ring.entry(other.keyid).roles
    assert Role.root not in ring.entry(other.keyid).roles
    sealed = seal_run_dir(make_run(), signer=signing_key(tmp_path / "colleague"))
    report = verify_all(cli)
    assert report["code"] == 0 and report["records"][0]["signer"] == sealed.signer
    # a signer that is not a root cannot change the keyring
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "colleague"))
    r = cli("keys", "trust", tmp_path / "c.pub", "--root")
    assert r.exit_code == ExitCode.REFUSED and "signed by 0 of the roots of version 2" in r.stderr


def test_revoking_a_key_untrusts_everything_it_signed(cli, store_home, tmp_path, make_run,
                                                      seal_run_dir) -> None:
    other = create_key(tmp_path / "colleague")
    (tmp_path / "c.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == 0
    theirs = seal_run_dir(make_run("theirs"), signer=signing_key(tmp_path / "colleague"))
    mine = seal_run_dir(make_run("mine"))
    r = cli("keys", "revoke", other.keyid[:12], "--reason", "laptop stolen", "--compromised")
    assert r.exit_code == 0
    report = verify_all(cli)
    assert report["code"] == ExitCode.FAILED  # its commit is signed by a revoked key
    checks = {c["id"]: c for c in report["records"]}
    assert checks[mine.id]["verified"] and not checks[theirs.id]["verified"]
    assert "revoked key" in json.dumps(checks[theirs.id]) and "laptop stolen" in json.dumps(report)
    shown = json.loads(cli("show", theirs.id[:12], "--json").stdout)
    assert shown["check"]["trust"] == "untrusted"
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == ExitCode.REFUSED  # never again


def test_a_revocation_keeps_what_the_key_signed_before_it(cli, store_home, tmp_path, make_run,
                                                         seal_run_dir) -> None:
    """Revoked from a version on (not compromised): the record its signed history puts
    before the revocation verifies, marked; the key is never trusted again; a record it
    signed that someone commits after the revocation with plain git fails."""
    import shutil
    import subprocess

    from registry.recipe import load_recipe
    from registry.seal import seal_resolved
    from registry.store.create import init_home
    from registry.store.trust import genesis
    from tests.conftest import ROOT, resolved_identity

    other = create_key(tmp_path / "colleague")
    (tmp_path / "c.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == 0
    theirs = seal_run_dir(make_run("theirs"), signer=signing_key(tmp_path / "colleague"))
    r = cli("keys", "revoke", other.keyid[:12], "--reason", "left the lab")
    assert r.exit_code == 0 and "earlier ones still verify" in r.stdout
    mine = seal_run_dir(make_run("mine"))
    report = verify_all(cli)
    assert report["code"] == 0, report
    checks = {c["id"]: c for c in report["records"]}
    assert checks[theirs.id]["verified"] and checks[theirs.id]["signer"] == other.keyid
    assert "before its revocation in keyring version 3 (left the lab)" in checks[theirs.id]["note"]
    assert checks[mine.id]["verified"] and checks[mine.id].get("note") is None
    assert "note: signed by key" in cli("verify", "--all").stdout
    shown = json.loads(cli("show", theirs.id[:12], "--json").stdout)
    assert shown["check"]["trust"] == "verified"
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == ExitCode.REFUSED  # never again
    # the revoked key signs a record elsewhere; an outsider commits it here with plain git
    elsewhere = init_home(tmp_path / "elsewhere" / ".registry")
    genesis(elsewhere, signing_key(tmp_path / "colleague"))
    late = seal_resolved(make_run("late"), home=elsewhere, identity=resolved_identity(),
                         recipe=load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml"),
                         signer=signing_key(tmp_path / "colleague"))
    ledger = store_home.ledger
    shutil.copytree(folder_at(elsewhere.ledger, late.id), ledger / record_folder(late.id))
    git = ["git", "-C", str(ledger), "-c", "user.name=x", "-c", "user.email=x@x"]
    subprocess.run([*git, "add", "records"], check=True)
    subprocess.run([*git, "commit", "-qm", "seal"], check=True)
    report = verify_all(cli)
    assert report["code"] == ExitCode.FAILED
    late_check = {c["id"]: c for c in report["records"]}[late.id]
    assert not late_check["verified"] and "revoked key" in json.dumps(late_check)
    assert {c["id"]: c for c in report["records"]}[theirs.id]["verified"]


def test_a_revocation_widens_to_compromised(cli, store_home, tmp_path, make_run,
                                            seal_run_dir) -> None:
    """Revoked from a version on, then found stolen; or retired, then stolen: `keys
    revoke --compromised` untrusts everything the key signed, in a new version."""
    keys = {}
    for name in ("left", "rotated"):
        keys[name] = create_key(tmp_path / name)
        (tmp_path / f"{name}.pub").write_text(keys[name].public_pem)
        assert cli("keys", "trust", tmp_path / f"{name}.pub").exit_code == 0
    signed = {name: seal_run_dir(make_run(f"run-{name}"), signer=signing_key(tmp_path / name)).id
              for name in keys}
    assert cli("keys", "revoke", keys["left"].keyid[:12], "--reason", "left").exit_code == 0
    assert cli("keys", "retire", keys["rotated"].keyid[:12], "--reason", "rotated").exit_code == 0
    assert verify_all(cli)["code"] == 0
    for name in keys:
        r = cli("keys", "revoke", keys[name].keyid[:12], "--reason", "stolen", "--compromised")
        assert r.exit_code == 0, r.stderr
    ring = current_keyring(store_home).current
    assert {d.keyid for d in ring.revoked if d.voids_past} == {k.keyid for k in keys.values()}
    assert cli("keys", "list").stdout.count("compromised") == 2
    assert not ring.retired
    report = verify_all(cli)
    assert report["code"] == ExitCode.FAILED
    checks = {c["id"]: c for c in report["records"]}
    assert not any(checks[rid]["verified"] for rid in signed.values())


def test_a_compromise_can_widen_a_revocation_but_nothing_narrows_it(tmp_path) -> None:
    """A later version may mark a revocation compromised; none may drop the mark (a
    root that could would bring back everything the key signed)."""
    root, other = create_key(tmp_path / "root"), create_key(tmp_path / "other")
    signer = signing_key(tmp_path / "root")
    entry = KeyEntry(public=root.public_pem, roles=[Role.root, Role.signer])
    gone = {"public": other.public_pem, "version": 2, "reason": "stolen"}

    def ring(version: int, **revoked: object) -> bytes:
        made = Keyring(version=version, keys=[entry], revoked=[{**gone, **revoked}])
        return sign_version(made, [signer])

    pin = Pin(roots=[root.keyid], threshold=1)
    base = {1: sign_version(Keyring(version=1, keys=[
        entry, KeyEntry(public=other.public_pem, roles=[Role.signer])]), [signer])}
    widened = verify_chain({**base, 2: ring(2, compromised=False), 3: ring(3, compromised=True)},
                           pin)
    assert widened.current.revoked[0].voids_past
    assert not widened.versions[2].revoked[0].voids_past
    with pytest.raises(Revoked, match="narrows the revocation"):
        verify_chain({**base, 2: ring(2, compromised=True), 3: ring(3, compromised=False)}, pin)
    with pytest.raises(Revoked, match="narrows the revocation"):  # absent: compromised
        verify_chain({**base, 2: ring(2), 3: ring(3, compromised=False)}, pin)


def test_rotation_keeps_old_records_valid(cli, store_home, make_run, seal_run_dir) -> None:
    before = seal_run_dir(make_run("before"))
    old = signing_key()[0]
    r = cli("keys", "rotate")
    assert r.exit_code == 0
    new = signing_key()[0]
    ring = current_keyring(store_home).current
    assert new != old and ring.entry(new) and not ring.entry(old)
    assert [d.keyid for d in ring.retired] == [old]
    after = seal_run_dir(make_run("after"))
    report = verify_all(cli)
    assert report["code"] == 0, report
    signers = {c["id"]: c["signer"] for c in report["records"]}
    assert signers == {before.id: old, after.id: new}
    with pytest.raises(Refused, match="not a signer"):  # the retired key signs nothing new
        seal_run_dir(make_run("late"), signer=(old, _private(store_home, old)))


def _private(home, keyid):
    from registry.signing.keys import local_signers

    return dict(local_signers())[keyid]


def test_a_clone_is_read_only_after_pinning_its_roots(cli, store_home, make_run,
                                                      seal_run_dir, tmp_path) -> None:
    import shutil
    import subprocess

    sealed = seal_run_dir(make_run())
    clone = tmp_path / "clone" / ".registry"
    clone.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(store_home.ledger), str(clone / "ledger")],
                   check=True)
    subprocess.run(["git", "-C", str(clone / "ledger"), "checkout", "-qB", "main"], check=True)
    shutil.copytree(store_home.objects, clone / "objects")
    r = cli("reindex", "--home", clone)
    assert r.exit_code == ExitCode.UNVERIFIABLE and "keys pin" in r.stderr
    root = signing_key()[0]
    assert cli("keys", "pin", "ab" * 32, "--home", clone).exit_code == ExitCode.FAILED
    assert cli("keys", "pin", root, "--home", clone).exit_code == 0
    assert cli("reindex", "--home", clone).exit_code == 0
    r = cli("verify", sealed.id[:12], "--home", clone)
    assert r.exit_code == 0, r.stdout


def test_threshold_two_needs_two_roots(tmp_path) -> None:
    """Test vectors for the chain rule, without a ledger."""
    keys = [signing_key(create_key(tmp_path / f"k{i}").private_path and tmp_path / f"k{i}")
            for i in range(3)]
    entries = [KeyEntry(public=public_pem(k.public_key()), roles=[Role.root, Role.signer])
               for _, k in keys]
    v1 = Keyring(version=1, threshold=2, keys=entries[:2])
    pin = Pin(roots=[keys[0][0], keys[1][0]], threshold=2)
    one = {1: sign_version(v1, keys[:1])}
    with pytest.raises(ThresholdNotMet, match="signed by 1 of the pinned roots, needs 2"):
        verify_chain(one, pin)
    files = {1: sign_version(v1, keys[:2])}
    assert verify_chain(files, pin).current.version == 1
    v2 = Keyring(version=2, threshold=1, keys=entries[2:])  # hand over to a new root
    with pytest.raises(ThresholdNotMet, match="version 1, needs 2"):
        verify_chain({**files, 2: sign_version(v2, [keys[0], keys[2]])}, pin)
    chain = verify_chain({**files, 2: sign_version(v2, keys)}, pin)
    assert list(chain.current.roots) == [keys[2][0]]
    skipped = {**files, 3: sign_version(v2.model_copy(update={"version": 3}), keys)}
    with pytest.raises(MissingVersion, match="version 2 is missing"):
        verify_chain(skipped, pin)
    pinned = Pin(roots=[keys[2][0]], version=2, sha256="0" * 64)
    with pytest.raises(RolledBack, match="not the one this home verified"):
        verify_chain({**files, 2: sign_version(v2, keys)}, pinned)


def test_a_deeply_nested_keyring_is_refused_not_a_crash() -> None:
    """Issue 21: the keyring payload was parsed with plain json.loads (RecursionError,
    exit 70)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from registry.signing import dsse
    from registry.signing.keyring import PAYLOAD_TYPE

    root = Ed25519PrivateKey.generate()
    payload = b'{"_type": "registry.keyring/v1", "keys": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    data = dsse.envelope_bytes(dsse.sign(payload, "k", root, PAYLOAD_TYPE))
    with pytest.raises(Malformed, match="not a keyring"):
        verify_chain({1: data}, Pin(roots=["k"]))


def test_a_reader_never_writes_trust_json_under_anothers_lock(cli, store_home, tmp_path) -> None:
    """Issue 21: `current_keyring` advanced the pin (writing trust.json) without the
    home lock, so a reader could overwrite what a pull just remembered (its remotes'
    heads: the rollback memory)."""
    import threading
    import time

    from registry.store.lock import exclusive
    from registry.store.trust import TrustState, load_state, path_of, save_state

    pinned_v1 = path_of(store_home).read_bytes()
    other = create_key(tmp_path / "colleague")
    (tmp_path / "c.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == 0
    path_of(store_home).write_bytes(pinned_v1)  # ledger at v2, pin still at v1
    found: list[int] = []
    with exclusive(store_home.lock_file):  # a pull, holding the lock
        reader = threading.Thread(target=lambda: found.append(
            current_keyring(store_home).current.version))
        reader.start()
        time.sleep(1.0)
        assert path_of(store_home).read_bytes() == pinned_v1  # the reader waits
        state = load_state(store_home)
        save_state(store_home, TrustState.model_validate(
            {**state.model_dump(), "remotes": {"origin": "a" * 40}}))
    reader.join(30)
    final = load_state(store_home)
    assert found == [2] and final.pin.version == 2 and final.remotes == {"origin": "a" * 40}


def _ring(tmp_path, n: int):
    keys = [signing_key(create_key(tmp_path / f"k{i}").private_path and tmp_path / f"k{i}")
            for i in range(n)]
    entries = [KeyEntry(public=public_pem(k.public_key()), roles=[Role.root, Role.signer])
               for _, k in keys]
    return keys, entries


def test_a_root_cannot_undo_a_revocation(tmp_path) -> None:
    """Issue 23: a root wrote version 3 without the revoked key in `revoked`, signed
    it, and the revoked key's records were trusted again."""
    from registry.signing.keyring import Departed

    keys, entries = _ring(tmp_path, 2)
    pin = Pin(roots=[keys[0][0]])
    v1 = Keyring(version=1, keys=entries)
    gone = Departed(public=entries[1].public, version=2, reason="laptop stolen")
    v2 = Keyring(version=2, keys=entries[:1], revoked=[gone])
    files = {1: sign_version(v1, keys[:1]), 2: sign_version(v2, keys[:1])}
    assert verify_chain(files, pin).current.revocation(keys[1][0]) is not None
    forgot = Keyring(version=3, keys=entries[:1])  # the revocation dropped
    with pytest.raises(Revoked, match="drops the revocation"):
        verify_chain({**files, 3: sign_version(forgot, keys[:1])}, pin)
    back = Keyring(version=3, keys=entries, revoked=[gone])  # trusted again while listed
    with pytest.raises(Revoked, match="lists as revoked"):
        verify_chain({**files, 3: sign_version(back, keys[:1])}, pin)


def test_a_keyring_from_a_newer_registry(tmp_path) -> None:
    """docs/formats.md: a field a newer version adds is kept (through a re-signed
    edit too); a newer major version is refused with "upgrade registry"."""
    from registry.base.canonical import canonical_bytes
    from registry.signing import dsse
    from registry.signing.keyring import PAYLOAD_TYPE

    keys, entries = _ring(tmp_path, 1)
    pin = Pin(roots=[keys[0][0]])
    document = {**Keyring(version=1, keys=entries).model_dump(by_alias=True),
                "expires": "2030-01-01"}
    document["keys"][0]["comment"] = "lab root"

    def signed(doc: dict) -> bytes:
        envelope = dsse.sign(canonical_bytes(doc), keys[0][0], keys[0][1], PAYLOAD_TYPE)
        return dsse.envelope_bytes(envelope)

    ring = verify_chain({1: signed(document)}, pin).current
    assert ring.model_extra == {"expires": "2030-01-01"}
    edited = ring.model_copy(update={"version": 2})
    v2 = verify_chain({1: signed(document), 2: sign_version(edited, keys)}, pin).current
    assert v2.model_extra == {"expires": "2030-01-01"}
    assert v2.keys[0].model_extra == {"comment": "lab root"}
    with pytest.raises(NewerFormat, match="newer format"):
        verify_chain({1: signed({**document, "_type": "registry.keyring/v2"})}, pin)


def test_compose_makes_a_change_again_on_top_of_theirs(tmp_path) -> None:
    """The replay of a keyring version made here on top of one made elsewhere: the
    same change (trusted, retired, revoked, threshold), and never a revoked key back."""
    from registry.signing.failures import KeyringConflict
    from registry.signing.keyring import Departed, compose

    keys, entries = _ring(tmp_path, 4)
    root, carol, dave, eve = entries
    base = Keyring(version=2, keys=[root, carol])
    theirs = Keyring(version=3, keys=[root, carol, dave])  # they trusted Dave
    gone = Departed(public=carol.public, version=3, reason="left")
    ours = Keyring(version=3, threshold=1, keys=[root, eve], retired=[gone])  # we: +Eve -Carol
    made = compose(theirs, base, ours)
    assert made.version == 4
    assert {k.keyid for k in made.keys} == {root.keyid, dave.keyid, eve.keyid}
    assert [d.keyid for d in made.retired] == [carol.keyid] and made.retired[0].version == 4
    signed = {1: sign_version(Keyring(version=1, keys=[root, carol]), keys[:1])}
    signed[2] = sign_version(base, keys[:1])
    signed[3] = sign_version(theirs, keys[:1])
    signed[4] = sign_version(made, keys[:1])
    assert verify_chain(signed, Pin(roots=[keys[0][0]])).current.version == 4
    revoked = Keyring(version=3, keys=[root], revoked=[Departed(public=carol.public, version=3,
                                                                reason="stolen")])
    promoted = Keyring(version=3, keys=[root, carol.model_copy(update={"roles": [Role.root]})])
    with pytest.raises(KeyringConflict, match="revoked on the other side"):
        compose(revoked, base, promoted)


def test_a_record_is_judged_by_the_keyring_of_when_it_was_added(cli, store_home, tmp_path,
                                                                 make_run, seal_run_dir) -> None:
    """A record signed by a key that the keyring trusted only later (committed under a
    trusted key's commit) is not trusted: `verify` checks each record under the keyring
    in effect when it was added, even though the newest keyring trusts its signer."""
    from registry.formats.record import record_id
    from registry.signing import dsse
    from registry.store.ledger import Ledger
    from registry.store.transaction import transaction

    sealed = seal_run_dir(make_run())
    other = create_key(tmp_path / "colleague")
    colleague = signing_key(tmp_path / "colleague")
    statement = (Ledger(store_home.ledger).record_dir(sealed.id) / "statement.json").read_bytes()
    early = statement.replace(b'"sealed_at":"', b'"sealed_at":"1', 1)
    rid = record_id(early)
    envelope = dsse.envelope_bytes(dsse.sign(early, *colleague))
    with transaction(store_home):  # the commit is signed by the home's own (trusted) key
        Ledger(store_home.ledger).commit_record(rid, early, envelope, rid, signing_key())
    (tmp_path / "c.pub").write_text(other.public_pem)
    assert cli("keys", "trust", tmp_path / "c.pub").exit_code == 0  # trusted from now on
    report = verify_all(cli)
    checks = {c["id"]: c for c in report["records"]}
    assert checks[sealed.id]["verified"] and not checks[rid]["verified"]
    assert checks[rid].get("signer") is None and any(
        p["part"] == "signature" for p in checks[rid]["problems"]), checks[rid]


def test_keyring_versions_read_from_the_working_tree_only_as_committed(store_home,
                                                                       monkeypatch) -> None:
    """A reader takes a keyring version from the ledger's working tree only when its bytes
    hash to the committed blob; changed, removed or replaced by a link, git's copy wins."""
    from registry.store.ledger import Ledger
    from registry.store.trust import keyring_files

    ledger = Ledger(store_home.ledger)
    committed = keyring_files(ledger)
    path = store_home.ledger / "keyring" / "1.json"
    assert committed == {1: ledger.blob(ledger.tree_files("keyring")["keyring/1.json"])}
    assert path.read_bytes() == committed[1]
    with monkeypatch.context() as m:  # as committed: no blob asked of git
        m.setattr(ledger, "blobs", lambda shas: pytest.fail(f"git asked for {shas}"))
        assert keyring_files(ledger) == committed
    path.write_bytes(committed[1] + b" ")
    assert keyring_files(ledger) == committed
    path.unlink()
    assert keyring_files(ledger) == committed
    (store_home.ledger / "elsewhere.json").write_bytes(committed[1])
    path.symlink_to(store_home.ledger / "elsewhere.json")
    assert keyring_files(ledger) == committed
