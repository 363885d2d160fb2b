"""Two members share a ledger through a real sshd on localhost (tests/sshd.py): push,
pull, concurrent seals reconciled without force, and remotes that lie refused on pull
with nothing applied. No mock of git, ssh or the store."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from registry.errors import ExitCode
from registry.store.ledger import folder_at, record_folder
from tests.conftest import ROOT, resolved_identity
from tests.sshd import SSHD, start_sshd


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if not SSHD.exists():
        pytest.skip("openssh-server is not installed (tools/setup.sh installs it)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@dataclass
class Member:
    name: str
    home: Path
    keys: Path
    keyid: str


@pytest.fixture
def team(tmp_path, monkeypatch, cli, hash_cache):
    """Alice starts the ledger; Bob joins by pinning her root; Alice trusts Bob's key."""
    from registry.signing.keys import create_key

    monkeypatch.delenv("REGISTRY_DATABASE_URL", raising=False)
    members = {}
    for name in ("alice", "bob"):
        key = create_key(tmp_path / name / "keys")
        members[name] = Member(name, tmp_path / name / ".registry", tmp_path / name / "keys",
                               key.keyid)
    alice, bob = members["alice"], members["bob"]
    act(monkeypatch, alice)
    assert cli("init", "--home", alice.home).exit_code == 0
    (tmp_path / "bob.pub").write_text(create_pub(bob))
    assert cli("keys", "trust", tmp_path / "bob.pub", "--home", alice.home).exit_code == 0
    act(monkeypatch, bob)
    r = cli("init", "--home", bob.home, "--pin", alice.keyid)
    assert r.exit_code == 0, r.stderr
    return alice, bob


def create_pub(member: Member) -> str:
    import os

    from registry.signing.keys import local_keys

    old = os.environ.get("REGISTRY_KEYS_DIR")
    os.environ["REGISTRY_KEYS_DIR"] = str(member.keys)
    try:
        return next(k.public_pem for k in local_keys() if k.default)
    finally:
        if old is not None:
            os.environ["REGISTRY_KEYS_DIR"] = old


def act(monkeypatch, member: Member) -> None:
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(member.keys))
    monkeypatch.setenv("REGISTRY_HOME", str(member.home))


def seal(member: Member, run: Path) -> str:
    from registry.recipe import load_recipe
    from registry.seal import seal_resolved
    from registry.signing.keys import signing_key
    from registry.store.home import home_at

    recipe = load_recipe(ROOT / "recipes" / "tiny-bf16-kv.toml")
    return seal_resolved(run, home=home_at(member.home), identity=resolved_identity(),
                         recipe=recipe, signer=signing_key(member.keys)).id


def verify_all(cli, member: Member) -> dict:
    r = cli("verify", "--all", "--json", "--home", member.home)
    assert "Traceback" not in r.stderr
    return {"code": r.exit_code, **json.loads(r.stdout)}


def head(member: Member) -> str:
    return subprocess.run(["git", "-C", str(member.home / "ledger"), "rev-parse", "main"],
                          capture_output=True, text=True, check=True).stdout.strip()


def add_remote(cli, monkeypatch, member: Member, url: str, ssh: str | None, create=False):
    act(monkeypatch, member)
    args = ["remote", "add", "origin", url, "--home", member.home]
    args += ["--ssh-command", ssh] if ssh else []
    args += ["--create"] if create else []
    r = cli(*args)
    assert r.exit_code == 0, r.stderr


def test_two_members_share_through_ssh(cli, team, sshd, tmp_path, make_run, monkeypatch) -> None:
    alice, bob = team
    url = sshd.url(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, sshd.ssh_command, create=True)
    first = seal(alice, make_run("first"))
    r = cli("push", "--json")
    assert r.exit_code == 0, r.stderr
    pushed = json.loads(r.stdout)
    assert pushed["sent"] == [first] and pushed["objects_out"]["objects"] >= 5

    add_remote(cli, monkeypatch, bob, url, sshd.ssh_command)
    r = cli("pull", "--json")
    assert r.exit_code == 0, r.stderr
    pulled = json.loads(r.stdout)
    assert pulled["received"] == [first] and pulled["objects_in"]["objects"] >= 5
    assert verify_all(cli, bob)["code"] == 0  # the objects came along
    assert cli("pull", "--json").exit_code == 0  # nothing new: nothing changes
    assert head(bob) == head(alice)

    # both seal before either pushes; the second push reconciles, nothing forced
    mine = seal(alice, make_run("alice-2"))
    theirs = seal(bob, make_run("bob-2"))
    act(monkeypatch, alice)
    assert cli("push").exit_code == 0
    act(monkeypatch, bob)
    r = cli("push", "--json")
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["received"] == [mine] and report["replayed"] == [theirs]
    act(monkeypatch, alice)
    r = cli("pull", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["received"] == [theirs]
    assert head(alice) == head(bob)
    for member in (alice, bob):
        report = verify_all(cli, member)
        assert report["code"] == 0, report
        signers = {c["id"]: c["signer"] for c in report["records"]}
        assert signers == {first: alice.keyid, mine: alice.keyid, theirs: bob.keyid}
    remote_log = subprocess.run(["git", "-C", str(tmp_path / "remote" / "ledger.git"), "reflog",
                                 "main"], capture_output=True, text=True).stdout
    assert "forced" not in remote_log


@pytest.fixture
def shared(cli, team, tmp_path, make_run, monkeypatch):
    """Alice pushed two records to a folder remote; Bob pulled them."""
    alice, bob = team
    url = str(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, None, create=True)
    ids = [seal(alice, make_run("one")), seal(alice, make_run("two"))]
    assert cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, None)
    assert cli("pull").exit_code == 0
    return alice, bob, tmp_path / "remote", ids


def outsider_clone(bare: Path, tmp_path: Path) -> Path:
    """A plain git clone, as anyone with write access to the remote makes one."""
    clone = tmp_path / "outsider"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True)
    for key, value in (("user.name", "x"), ("user.email", "x@x")):
        subprocess.run(["git", "-C", str(clone), "config", key, value], check=True)
    return clone


def force(clone: Path, bare: Path) -> None:
    subprocess.run(["git", "-C", str(bare), "config", "receive.denyNonFastForwards", "false"],
                   check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-qf", "origin", "HEAD:main"], check=True)


def refused(cli, bob: Member, *words: str) -> None:
    before = head(bob)
    r = cli("pull", "--home", bob.home)
    assert r.exit_code == ExitCode.FAILED, (r.stdout, r.stderr)
    assert "nothing was applied" in r.stderr and "Traceback" not in r.stderr
    for word in words:
        assert word in r.stderr, r.stderr
    assert head(bob) == before


def test_a_rewritten_remote_is_refused(cli, shared, tmp_path, monkeypatch) -> None:
    _, bob, remote, _ = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    subprocess.run(["git", "-C", str(clone), "reset", "-q", "--hard", "HEAD~1"], check=True)
    force(clone, remote / "ledger.git")  # back one commit: a record gone
    act(monkeypatch, bob)
    refused(cli, bob, "history was rewritten")
    (clone / "records" / "x").mkdir(parents=True)
    (clone / "records" / "x" / "statement.json").write_text("{}")
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "another"], check=True)
    force(clone, remote / "ledger.git")  # and a new line of history on top
    refused(cli, bob, "history was rewritten", "does not descend")


def test_a_deleted_record_is_refused(cli, shared, tmp_path, monkeypatch) -> None:
    _, bob, remote, ids = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    subprocess.run(["git", "-C", str(clone), "rm", "-rq", record_folder(ids[0])], check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "tidy"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)
    act(monkeypatch, bob)
    refused(cli, bob, "not signed", f"record {ids[0][:12]}: statement.json deleted")
    from registry.signing.failures import Kind
    from registry.team.incoming import PullRefused

    with pytest.raises(PullRefused) as refusal:  # and by type, not by text
        pull_as(bob)
    assert refusal.value.kinds == {Kind.unsigned, Kind.not_append_only}


def test_a_forged_record_is_refused(cli, shared, tmp_path, make_run, monkeypatch) -> None:
    """A record and its commit signed by a key the keyring never trusted, pushed
    with plain git."""
    from registry.formats.record import record_id
    from registry.signing import dsse
    from registry.signing.keys import create_key, signing_key
    from registry.store.ledger import Ledger

    alice, bob, remote, ids = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    create_key(tmp_path / "mallory")
    keyid, key = signing_key(tmp_path / "mallory")
    statement = (folder_at(alice.home / "ledger", ids[0]) / "statement.json").read_bytes()
    statement = statement.replace(b"bfloat16", b"fp8_e4m3")
    rid = record_id(statement)
    envelope = dsse.envelope_bytes(dsse.sign(statement, keyid, key))
    subprocess.run(["git", "-C", str(clone), "checkout", "-qB", "main"], check=True)
    Ledger(clone).commit_record(rid, statement, envelope, rid, (keyid, key))
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"], check=True)
    act(monkeypatch, bob)
    refused(cli, bob, "which the keyring in effect does not trust")


def pushed_log(cli, alice: Member, remote: Path, make_run, monkeypatch) -> tuple[str, str, Path]:
    """Alice seals and pushes a record: (its id, its server.log digest, that object's
    file in the remote)."""
    act(monkeypatch, alice)
    new = seal(alice, make_run("three"))
    assert cli("push").exit_code == 0
    log = next(s for s in json.loads(cli("show", new[:12], "--json").stdout)["statement"]
               ["subject"] if s["name"] == "server.log")["digest"]["sha256"]
    return new, log, remote / "objects" / "sha256" / log[:2] / log[2:]


def test_corrupt_objects_on_the_remote_apply_nothing(cli, shared, tmp_path, make_run,
                                                      monkeypatch) -> None:
    alice, bob, remote, _ = shared
    new, _log, target = pushed_log(cli, alice, remote, make_run, monkeypatch)
    target.chmod(0o644)
    target.write_bytes(b"INFO something else\n")
    act(monkeypatch, bob)
    before = head(bob)
    r = cli("pull")
    assert r.exit_code == ExitCode.UNVERIFIABLE and "arrived with other bytes" in r.stderr
    assert head(bob) == before and not (folder_at(bob.home / "ledger", new)).exists()


def test_a_home_that_started_its_own_keyring_cannot_pull(cli, shared, tmp_path,
                                                         monkeypatch) -> None:
    alice, bob, remote, _ = shared
    act(monkeypatch, bob)
    other = tmp_path / "carol" / ".registry"
    assert cli("init", "--home", other).exit_code == 0
    assert cli("remote", "add", "origin", remote, "--home", other).exit_code == 0
    assert cli("keys", "pin", alice.keyid, "--home", other).exit_code != 0
    r = cli("pull", "--home", other)
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr


def test_remote_urls_that_could_run_commands_are_refused(cli, team, monkeypatch) -> None:
    alice, _ = team
    act(monkeypatch, alice)
    for url in ("ext::sh -c touch% /tmp/pwned", "http://example.com/x", "ssh://-oProxyCommand=x/y",
                "relative/path", "ssh://host/../etc", "/srv/team/../../etc",
                "file:///srv/../etc"):
        r = cli("remote", "add", "evil", url)
        assert r.exit_code == ExitCode.INVALID_INPUT, url
    assert "evil" not in cli("remote", "list", "--json").stdout


@pytest.mark.postgres
def test_two_homes_share_one_postgres_index(cli, team, tmp_path, make_run, monkeypatch,
                                            postgres_server) -> None:
    """Both homes point at one database: the pull writes the rows the sealer already
    wrote without a conflict, both list the record, and either can rebuild the index."""
    import uuid

    import psycopg

    name = f"t{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server.format(db="postgres").replace("+psycopg", ""),
                         autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    monkeypatch.setenv("REGISTRY_DATABASE_URL", postgres_server.format(db=name))
    alice, bob = team
    url = str(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, None, create=True)
    assert cli("reindex").exit_code == 0
    sealed = seal(alice, make_run("shared"))
    assert cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, None)
    assert cli("pull").exit_code == 0
    for member in (alice, bob):
        listed = json.loads(cli("list", "--json", "--home", member.home).stdout)
        assert [r["id"] for r in listed] == [sealed] and listed[0]["trust"] == "verified"
        assert verify_all(cli, member)["code"] == 0
    assert cli("reindex", "--home", bob.home).exit_code == 0
    assert verify_all(cli, alice)["code"] == 0


def plant_signed(clone: Path, member: Member, statement: dict) -> str:
    """A statement signed by a trusted member's key, committed by that key in an
    outsider's clone of the remote and pushed with plain git: what a member on another
    version of the registry (or a buggy one) could push."""
    from registry.base.canonical import canonical_bytes
    from registry.formats.record import record_id
    from registry.signing import dsse
    from registry.signing.keys import signing_key
    from registry.store.ledger import Ledger

    data = canonical_bytes(statement)
    rid = record_id(data)
    keyid, key = signing_key(member.keys)
    envelope = dsse.envelope_bytes(dsse.sign(data, keyid, key))
    subprocess.run(["git", "-C", str(clone), "checkout", "-qB", "main"], check=True)
    Ledger(clone).commit_record(rid, data, envelope, rid, (keyid, key))
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"], check=True)
    return rid


def test_a_signed_record_that_does_not_parse_is_never_applied(cli, shared, tmp_path,
                                                              monkeypatch) -> None:
    """Issue 21: the branch moved before the new statements were parsed."""
    alice, bob, remote, ids = shared
    genuine = json.loads((folder_at(alice.home / "ledger", ids[0]) / "statement.json")
                         .read_bytes())
    del genuine["predicate"]["run"]  # signed and hashing to its id, but not a record
    rid = plant_signed(outsider_clone(remote / "ledger.git", tmp_path), alice, genuine)
    act(monkeypatch, bob)
    before, trust = head(bob), (bob.home / "trust.json").read_bytes()
    r = cli("pull", "--home", bob.home)
    assert r.exit_code == ExitCode.FAILED and "Traceback" not in r.stderr, r.stderr
    assert "nothing was applied" in r.stderr and rid[:12] in r.stderr
    assert head(bob) == before and not (folder_at(bob.home / "ledger", rid)).exists()
    assert (bob.home / "trust.json").read_bytes() == trust
    assert verify_all(cli, bob)["code"] == 0


def pull_as(member: Member):
    """Pull in process, so a test can assert the refusal's type."""
    from registry.store.home import home_at
    from registry.team.remotes import get_remote
    from registry.team.sync import pull

    home = home_at(member.home)
    return pull(home, get_remote(home, None))


def test_a_record_from_a_newer_registry_verifies_pulls_and_shows(cli, shared, tmp_path,
                                                                monkeypatch) -> None:
    """docs/formats.md: optional fields a newer version adds are kept; the signed bytes
    stay as they were signed."""
    alice, bob, remote, ids = shared
    statement = json.loads((folder_at(alice.home / "ledger", ids[0]) / "statement.json")
                           .read_bytes())
    statement["predicate"]["run"]["label"] = "run-2"  # unique, and still a valid run
    statement["predicate"]["carbon"] = {"grams": 12}  # fields this version does not know
    statement["subject"][0]["annotations"] = {"by": "v2"}
    rid = plant_signed(outsider_clone(remote / "ledger.git", tmp_path), alice, statement)
    act(monkeypatch, bob)
    r = cli("pull", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["received"] == [rid]
    from registry.base.canonical import canonical_bytes

    stored = folder_at(bob.home / "ledger", rid) / "statement.json"
    assert stored.read_bytes() == canonical_bytes(statement)
    shown = json.loads(cli("show", rid[:12], "--json").stdout)
    assert shown["check"]["trust"] == "verified"
    assert verify_all(cli, bob)["code"] == 0


def test_a_newer_major_format_is_refused_as_such(cli, shared, tmp_path, monkeypatch) -> None:
    from registry.signing.failures import Kind
    from registry.team.incoming import PullRefused

    alice, bob, remote, ids = shared
    statement = json.loads((folder_at(alice.home / "ledger", ids[0]) / "statement.json")
                           .read_bytes())
    statement["predicateType"] = "https://registry.dev/serving-record/v2"
    plant_signed(outsider_clone(remote / "ledger.git", tmp_path), alice, statement)
    act(monkeypatch, bob)
    before = head(bob)
    with pytest.raises(PullRefused) as refusal:
        pull_as(bob)
    assert refusal.value.kinds == {Kind.newer_format}
    assert "upgrade registry" in str(refusal.value) and head(bob) == before


def test_a_rolled_back_remote_is_refused_by_type(cli, shared, tmp_path, monkeypatch) -> None:
    from registry.signing.failures import Kind
    from registry.team.incoming import PullRefused

    _, bob, remote, _ = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    subprocess.run(["git", "-C", str(clone), "reset", "-q", "--hard", "HEAD~1"], check=True)
    force(clone, remote / "ledger.git")
    act(monkeypatch, bob)
    with pytest.raises(PullRefused) as refusal:
        pull_as(bob)
    assert refusal.value.kinds == {Kind.rolled_back}


HOOKS = ("pre-receive", "update", "post-receive", "post-update", "reference-transaction",
         "push-to-checkout", "pre-auto-gc")


def plant_hooks(bare: Path, tmp_path: Path) -> Path:
    """Everything issue 23 planted in a remote's ledger.git: hooks, a core.hooksPath, and
    core.alternateRefsCommand with an alternates file. Each leaves a file in the folder
    returned when it runs."""
    ran = tmp_path / "ran"
    ran.mkdir()
    other = tmp_path / "hookdir"
    other.mkdir()
    for folder, tag in ((bare / "hooks", "hooks"), (other, "hookspath")):
        folder.mkdir(exist_ok=True)
        for name in HOOKS:
            hook = folder / name
            hook.write_text(f"#!/bin/sh\ntouch {ran}/{tag}-{name}\ncat >/dev/null\nexit 0\n")
            hook.chmod(0o755)
    alternate = tmp_path / "alternate.git"
    subprocess.run(["git", "init", "-q", "--bare", str(alternate)], check=True)
    (bare / "objects" / "info").mkdir(exist_ok=True)
    (bare / "objects" / "info" / "alternates").write_text(f"{alternate / 'objects'}\n")
    for key, value in (("core.hooksPath", str(other)),
                       ("core.alternateRefsCommand", f"touch {ran}/alternate-refs; echo")):
        subprocess.run(["git", "-C", str(bare), "config", key, value], check=True)
    return ran


def assert_no_remote_code(cli, alice: Member, bob: Member, ran: Path, make_run,
                          monkeypatch) -> None:
    act(monkeypatch, alice)
    seal(alice, make_run("after-the-plant"))
    r = cli("push")
    assert r.exit_code == 0, r.stderr
    act(monkeypatch, bob)
    r = cli("pull")
    assert r.exit_code == 0, r.stderr
    seal(bob, make_run("bob-after-the-plant"))
    assert cli("push").exit_code == 0
    assert sorted(p.name for p in ran.iterdir()) == []
    assert head(alice) != head(bob)  # and the pushes did arrive
    act(monkeypatch, alice)
    assert cli("pull").exit_code == 0 and head(alice) == head(bob)


def test_a_folder_remote_runs_no_code_on_push_or_pull(cli, shared, tmp_path, make_run,
                                                       monkeypatch) -> None:
    """Issue 23: git did not pass `-c core.hooksPath=/dev/null` on to the receive-pack it
    starts for a local path, so a remote's hooks ran as the member on every push."""
    alice, bob, remote, _ = shared
    ran = plant_hooks(remote / "ledger.git", tmp_path)
    assert_no_remote_code(cli, alice, bob, ran, make_run, monkeypatch)


def test_an_ssh_remote_runs_no_code_on_push_or_pull(cli, team, sshd, tmp_path, make_run,
                                                    monkeypatch) -> None:
    alice, bob = team
    url = sshd.url(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, sshd.ssh_command, create=True)
    seal(alice, make_run("first"))
    assert cli("push").exit_code == 0
    add_remote(cli, monkeypatch, bob, url, sshd.ssh_command)
    assert cli("pull").exit_code == 0
    ran = plant_hooks(tmp_path / "remote" / "ledger.git", tmp_path)
    assert_no_remote_code(cli, alice, bob, ran, make_run, monkeypatch)


def keyring_of(member: Member) -> dict:
    from registry.store.home import home_at
    from registry.store.trust import current_keyring

    ring = current_keyring(home_at(member.home)).current
    return {"version": ring.version, "keys": {k.keyid for k in ring.keys},
            "revoked": {d.keyid for d in ring.revoked}}


def test_a_revocation_reaches_the_remote_while_the_revoked_key_pushes(
        cli, shared, tmp_path, make_run, monkeypatch) -> None:
    """Issue 23: Alice revokes Bob locally (v3) while Bob pushes a record; every push
    and pull of Alice's was refused forever ("version 2 is older than version 3")."""
    alice, bob, _remote, _ = shared
    act(monkeypatch, alice)
    assert cli("keys", "revoke", bob.keyid[:12], "--reason", "laptop stolen",
               "--compromised").exit_code == 0
    act(monkeypatch, bob)
    theirs = seal(bob, make_run("bob-before-he-knows"))
    assert cli("push").exit_code == 0
    act(monkeypatch, alice)
    r = cli("push", "--json")
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["untrusted"] and theirs in report["untrusted"]
    assert "revoked" in report["untrusted"][theirs]
    assert keyring_of(alice)["version"] == 3 and bob.keyid in keyring_of(alice)["revoked"]
    shown = json.loads(cli("show", theirs[:12], "--json").stdout)
    assert shown["check"]["trust"] == "untrusted"
    act(monkeypatch, bob)
    assert cli("pull").exit_code == 0  # the revocation arrived
    assert bob.keyid in keyring_of(bob)["revoked"]
    act(monkeypatch, alice)
    assert cli("pull").exit_code == 0 and head(alice) == head(bob)


def test_a_revocation_keeps_earlier_records_and_a_backdated_one_is_refused(
        cli, shared, tmp_path, make_run, monkeypatch) -> None:
    """Alice revokes Bob from keyring v3 on (he left; not compromised): his record pushed
    before it still verifies in both homes, marked. Bob, who has not pulled v3, seals
    another on his side of history and force-pushes that history over the remote with
    plain git, so his record sits before the revocation: the pull refuses it (the remote
    no longer descends from the head Alice verified) and nothing changes."""
    alice, bob, remote, _ = shared
    act(monkeypatch, bob)
    earlier = seal(bob, make_run("bob-earlier"))
    assert cli("push").exit_code == 0
    act(monkeypatch, alice)
    assert cli("keys", "revoke", bob.keyid[:12], "--reason", "left the lab").exit_code == 0
    pushed = cli("push")
    assert pushed.exit_code == 0
    assert "pushed 1 commit(s)" in pushed.stdout and "up to date" not in pushed.stdout
    assert "keyring" in pushed.stdout.split("commit(s)", 1)[1]  # says it was a keyring
    report = verify_all(cli, alice)
    assert report["code"] == 0, report
    check = {c["id"]: c for c in report["records"]}[earlier]
    assert check["verified"] and check["signer"] == bob.keyid
    assert "before its revocation in keyring version 3" in check["note"]
    act(monkeypatch, bob)
    backdated = seal(bob, make_run("bob-backdated"))  # his home still has v2
    subprocess.run(["git", "-C", str(remote / "ledger.git"), "config",
                    "receive.denyNonFastForwards", "false"], check=True)
    subprocess.run(["git", "-C", str(bob.home / "ledger"), "push", "-qf",
                    str(remote / "ledger.git"), "main:main"], check=True)
    act(monkeypatch, alice)
    before = head(alice)
    r = cli("pull")
    assert r.exit_code == ExitCode.FAILED and "nothing was applied" in r.stderr, r.stderr
    assert head(alice) == before and not (alice.home / "ledger" / "records" / backdated).exists()
    assert verify_all(cli, alice)["code"] == 0


def test_keyring_versions_made_on_both_sides_compose(cli, shared, tmp_path, make_run,
                                                     monkeypatch) -> None:
    """Two homes of the root holder each make keyring version 3 (trust Carol; trust
    Dave); the second push makes its change again on top, as version 4, re-signed."""
    from registry.signing.keys import create_key

    alice, _bob, remote, _ = shared
    second = Member("alice2", tmp_path / "alice2" / ".registry", alice.keys, alice.keyid)
    act(monkeypatch, second)
    assert cli("init", "--home", second.home, "--pin", alice.keyid).exit_code == 0
    add_remote(cli, monkeypatch, second, str(remote), None)
    assert cli("pull").exit_code == 0
    carol, dave = create_key(tmp_path / "carol"), create_key(tmp_path / "dave")
    for who, member in ((carol, alice), (dave, second)):
        (tmp_path / f"{who.keyid}.pub").write_text(who.public_pem)
        act(monkeypatch, member)
        assert cli("keys", "trust", tmp_path / f"{who.keyid}.pub").exit_code == 0
    act(monkeypatch, alice)
    assert cli("push").exit_code == 0
    act(monkeypatch, second)
    mine = seal(second, make_run("after-dave"))
    r = cli("push", "--json")
    assert r.exit_code == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["replayed"] == [mine] and "as version 4" in report["keyring"][0]
    ring = keyring_of(second)
    assert ring["version"] == 4 and {carol.keyid, dave.keyid} <= ring["keys"]
    act(monkeypatch, alice)
    assert cli("pull").exit_code == 0 and keyring_of(alice) == ring
    assert verify_all(cli, alice)["code"] == 0


def pull_process(member: Member, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`registry pull` as a separate process, so a hang fails the test instead of
    hanging it."""
    import os
    import sys

    env = {**os.environ, "REGISTRY_HOME": str(member.home), "REGISTRY_KEYS_DIR": str(member.keys)}
    return subprocess.run([sys.executable, "-m", "registry", "pull"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "loop", "shard-link"])
def test_hostile_objects_in_a_folder_remote_are_refused(cli, shared, tmp_path, make_run,
                                                        monkeypatch, kind) -> None:
    """Issue 23: a FIFO made pull hang for ever holding the home lock; a symlink to
    /dev/zero wrote without bound; a directory or a symlink loop was exit 70."""
    import os

    alice, bob, remote, _ = shared
    new, log, target = pushed_log(cli, alice, remote, make_run, monkeypatch)
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "directory":
        target.mkdir()
    elif kind == "loop":
        target.symlink_to(target)
    else:  # the shard folder itself a link to a folder holding the object
        shard = target.parent
        elsewhere = tmp_path / "elsewhere"
        shard.rename(elsewhere)
        (elsewhere / log[2:]).write_text("INFO engine started\n")
        shard.symlink_to(elsewhere)
    before = head(bob)
    done = pull_process(bob)
    assert done.returncode == ExitCode.UNVERIFIABLE, (done.stdout, done.stderr)
    assert "refused" in done.stderr and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert head(bob) == before and not (folder_at(bob.home / "ledger", new)).exists()
    incoming = bob.home / "objects" / "incoming"
    assert not incoming.exists() or sum(p.stat().st_size for p in incoming.iterdir()) < 1 << 20


def has_object(member: Member, sha: str) -> bool:
    return subprocess.run(["git", "-C", str(member.home / "ledger"), "cat-file", "-e", sha],
                          capture_output=True).returncode == 0


def test_an_oversized_commit_is_refused_unread_and_removed(cli, shared, tmp_path,
                                                           monkeypatch) -> None:
    """Issue 23: a 100 MB commit message cost 452 MiB to refuse; a refused junk blob
    stayed in the member's ledger/.git for good."""
    _, bob, remote, _ = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    (clone / "junk.bin").write_bytes(__import__("os").urandom(1 << 20))
    subprocess.run(["git", "-C", str(clone), "add", "junk.bin"], check=True)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "junk"], check=True)
    junk = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD:junk.bin"],
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)
    act(monkeypatch, bob)
    before = head(bob)
    r = cli("pull")
    assert r.exit_code == ExitCode.FAILED and "not a ledger file" in r.stderr
    assert head(bob) == before and not has_object(bob, junk)
    big = tmp_path / "message"
    big.write_bytes(b"x" * (2 << 20))
    subprocess.run(["git", "-C", str(clone), "commit", "-q", "--allow-empty", "-F", str(big)],
                   check=True)
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)
    r = cli("pull")
    assert r.exit_code == ExitCode.FAILED and "over the 1,048,576 byte cap" in r.stderr
    assert head(bob) == before and not has_object(bob, sha) and not has_object(bob, junk)


def test_a_huge_commit_is_refused_within_bounded_memory(cli, shared, tmp_path,
                                                       monkeypatch) -> None:
    """Issue 23: git's own fetch peaked at 292 MiB on a 300 MB commit (inflated whole by
    pack-objects and index-pack before the size caps could refuse it). Each git the
    pull starts is measured by /usr/bin/time around it (what git waits for included)."""
    import registry.store.git as registry_git

    _, bob, remote, _ = shared
    clone = outsider_clone(remote / "ledger.git", tmp_path)
    big = tmp_path / "message"
    with open(big, "wb") as f:
        for _ in range(100):
            f.write(b"x" * 1_000_000)
    subprocess.run(["git", "-C", str(clone), "commit", "-q", "--allow-empty", "-F", str(big)],
                   check=True)
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                         text=True, check=True).stdout.strip()
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)
    peaks = tmp_path / "git-rss"
    plain = registry_git.git_args
    monkeypatch.setattr(registry_git, "git_args", lambda repo, *a: [
        "/usr/bin/time", "-a", "-o", str(peaks), "-f", "%M", *plain(repo, *a)])
    act(monkeypatch, bob)
    before = head(bob)
    r = cli("pull")
    assert r.exit_code == ExitCode.UNVERIFIABLE, (r.stdout, r.stderr)
    assert "needed more than 64 MiB" in r.stderr and "nothing was applied" in r.stderr
    assert r.stderr.count("error:") == 1 and "Traceback" not in r.stderr
    kib = [int(x) for x in peaks.read_text().split() if x.isdigit()]
    assert kib and max(kib) < 100 * 1024, max(kib)
    assert head(bob) == before and not has_object(bob, sha)
    assert not list((bob.home / "ledger" / ".git" / "objects" / "pack").glob("tmp_*"))


def test_keys_init_after_init_pin_keeps_the_team_pin(cli, team, tmp_path, monkeypatch) -> None:
    """Issue 23: `keys init` after `init --pin` silently replaced the team's pin."""
    alice, _ = team
    carol = Member("carol", tmp_path / "carol" / ".registry", tmp_path / "carol" / "keys", "")
    act(monkeypatch, carol)
    assert cli("init", "--home", carol.home, "--pin", alice.keyid).exit_code == 0
    pinned = (carol.home / "trust.json").read_bytes()
    r = cli("keys", "init", "--home", carol.home)
    assert r.exit_code == 0 and "pins root key" in r.stdout, r.stdout
    assert (carol.home / "trust.json").read_bytes() == pinned
    assert subprocess.run(["git", "-C", str(carol.home / "ledger"), "rev-parse", "--verify",
                           "-q", "main"], capture_output=True).returncode != 0  # no keyring


def test_a_trust_json_others_can_write_draws_a_warning(cli, team, monkeypatch) -> None:
    alice, _ = team
    act(monkeypatch, alice)
    (alice.home / "trust.json").chmod(0o666)
    r = cli("verify", "--all")
    assert r.exit_code == 0 and "warning:" in r.stderr and "writable by others" in r.stderr
    (alice.home / "trust.json").chmod(0o600)


def test_an_odd_partial_upload_on_an_ssh_remote_breaks_nothing(cli, team, sshd, tmp_path,
                                                              make_run, monkeypatch) -> None:
    """Issue 23: a file `objects/tmp/x y.part` made every ssh push exit 70."""
    alice, _ = team
    url = sshd.url(tmp_path / "remote")
    add_remote(cli, monkeypatch, alice, url, sshd.ssh_command, create=True)
    (tmp_path / "remote" / "objects" / "tmp" / "x y.part").write_text("partial")
    (tmp_path / "remote" / "objects" / "tmp" / "a\nb.part").write_text("partial")
    seal(alice, make_run("first"))
    r = cli("push")
    assert r.exit_code == 0, r.stderr


def test_a_reader_without_a_key_pulls_again_and_again(cli, shared, tmp_path, make_run,
                                                      monkeypatch) -> None:
    """Pulling needs no signing key: only a replay of local commits signs."""
    alice, _, remote, ids = shared
    reader = Member("reader", tmp_path / "reader" / ".registry", tmp_path / "reader" / "keys", "")
    act(monkeypatch, reader)
    assert cli("init", "--home", reader.home, "--pin", alice.keyid).exit_code == 0
    add_remote(cli, monkeypatch, reader, str(remote), None)
    assert cli("pull").exit_code == 0
    act(monkeypatch, alice)
    new = seal(alice, make_run("later"))
    assert cli("push").exit_code == 0
    act(monkeypatch, reader)
    r = cli("pull", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["received"] == [new]
    assert verify_all(cli, reader)["code"] == 0 and len(ids) == 2


def test_the_git_heap_cap_grows_with_the_ledger_and_can_be_set(shared, monkeypatch) -> None:
    """The cap is sized from this side only (the ledger's own object count: a remote
    cannot raise it); REGISTRY_GIT_MEMORY sets it for a first pull of a huge ledger."""
    from registry.errors import InvalidInput
    from registry.store.git import MEMORY_ENV, PER_OBJECT, REMOTE_MEMORY, remote_heap

    _, bob, _, _ = shared
    ledger = bob.home / "ledger"
    counted = subprocess.run(["git", "-C", str(ledger), "count-objects", "-v"],
                             capture_output=True, text=True, check=True).stdout
    fields = dict(line.split(": ") for line in counted.splitlines())
    objects = int(fields["count"]) + int(fields["in-pack"])
    assert objects > 10
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    assert remote_heap(ledger) == REMOTE_MEMORY + PER_OBJECT * objects
    monkeypatch.setenv(MEMORY_ENV, "512")
    assert remote_heap(ledger) == 512 << 20
    for bad in ("lots", "8", "-1"):
        monkeypatch.setenv(MEMORY_ENV, bad)
        with pytest.raises(InvalidInput, match=MEMORY_ENV):
            remote_heap(ledger)


def test_a_push_outlasts_a_remote_that_keeps_moving(cli, shared, make_run, monkeypatch) -> None:
    """Bob pushes a new record just before each of Alice's first seven pushes reaches
    the remote (more than the five tries a push once had): hers still lands, after
    waiting a little longer each time, and both ledgers verify with every record."""
    from registry.signing.keys import signing_key
    from registry.store.home import home_at
    from registry.team import sync
    from registry.team.remotes import get_remote

    alice, bob, _remote, _ = shared
    mine = seal(alice, make_run("alice-late"))
    real, bobs = sync._git_push, []

    def racing(ledger, remote, head):
        if ledger.path.is_relative_to(alice.home) and len(bobs) < 7:
            bobs.append(seal(bob, make_run(f"bob-{len(bobs)}")))
            bob_home = home_at(bob.home)
            ours = sync.push(bob_home, get_remote(bob_home, None), signing_key(bob.keys))
            assert ours.sent  # bob's new record went first: alice's head is stale
        return real(ledger, remote, head)

    monkeypatch.setattr(sync, "_git_push", racing)
    act(monkeypatch, alice)
    r = cli("push", "--json")
    assert r.exit_code == 0, r.stderr
    assert len(bobs) == 7 and json.loads(r.stdout)["sent"] == [mine]
    for member in (alice, bob):
        act(monkeypatch, member)
        assert cli("pull").exit_code == 0
        assert verify_all(cli, member)["code"] == 0
        listed = cli("list", "--json", "--home", member.home)
        assert set(bobs) | {mine} <= {row["id"] for row in json.loads(listed.stdout)}
