"""Finding and creating a home; Ed25519 keys: 0600 outside the ledger, trusted by the
ledger, refused when missing."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

import git
import pytest
from cryptography.hazmat.primitives import serialization

from registry.errors import ExitCode, NotFound
from registry.signing.keyring import Role
from registry.signing.keys import NoSigningKey, create_key, keys_dir, local_keys, signing_key
from registry.store.create import init_home
from registry.store.home import find_home
from registry.store.trust import current_keyring


def trusted(home) -> set[str]:
    return set(current_keyring(home).current.with_role(Role.signer))


@pytest.fixture
def no_env(monkeypatch):
    for name in ("REGISTRY_HOME", "REGISTRY_DATABASE_URL", "REGISTRY_KEYS_DIR", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)


def test_init_creates_the_layout(tmp_path, no_env) -> None:
    home = init_home(tmp_path / ".registry")
    assert (home.objects / "sha256").is_dir() and (home.objects / "tmp").is_dir()
    repo = git.Repo(home.ledger)
    assert not repo.head.is_valid()  # empty: the first commit is the keyring's first version
    assert home.database_url == f"sqlite:///{home.root / 'index.sqlite'}"
    assert (home.root / "index.sqlite").is_file()
    init_home(home.root)  # idempotent
    assert not repo.head.is_valid()


def test_home_is_found_walking_up_like_git(tmp_path, no_env) -> None:
    home = init_home(tmp_path / "project" / ".registry")
    deep = tmp_path / "project" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_home(cwd=deep).root == home.root


def test_explicit_home_then_environment_then_walk(tmp_path, monkeypatch, no_env) -> None:
    walked = init_home(tmp_path / "here" / ".registry")
    env = init_home(tmp_path / "env-home")
    explicit = init_home(tmp_path / "explicit-home")
    cwd = tmp_path / "here"
    assert find_home(cwd=cwd).root == walked.root
    monkeypatch.setenv("REGISTRY_HOME", str(env.root))
    assert find_home(cwd=cwd).root == env.root
    assert find_home(explicit.root, cwd=cwd).root == explicit.root


def test_no_home_says_to_run_init(tmp_path, no_env) -> None:
    with pytest.raises(NotFound, match="no registry home") as e:
        find_home(cwd=tmp_path)
    assert "registry init" in (e.value.hint or "")
    with pytest.raises(NotFound, match="not a registry home"):
        find_home(tmp_path)


def test_database_url_from_the_environment(tmp_path, monkeypatch, no_env) -> None:
    init_home(tmp_path / "h")
    monkeypatch.setenv("REGISTRY_DATABASE_URL", "postgresql+psycopg://db/x")
    assert find_home(tmp_path / "h").database_url == "postgresql+psycopg://db/x"


def test_keys_dir_defaults(tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert keys_dir() == tmp_path / ".config" / "registry" / "keys"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert keys_dir() == tmp_path / "xdg" / "registry" / "keys"
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "k"))
    assert keys_dir() == tmp_path / "k"


def test_private_key_is_0600_and_its_id_is_the_public_key_digest(tmp_path) -> None:
    key = create_key(tmp_path / "keys")
    path = Path(key.private_path or "")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    keyid, private = signing_key(tmp_path / "keys")
    raw = private.public_key().public_bytes(serialization.Encoding.Raw,
                                            serialization.PublicFormat.Raw)
    assert keyid == key.keyid == hashlib.sha256(raw).hexdigest()
    second = create_key(tmp_path / "keys")  # the newest key becomes the default
    assert signing_key(tmp_path / "keys")[0] == second.keyid
    assert {k.keyid for k in local_keys(tmp_path / "keys")} == {key.keyid, second.keyid}


def test_missing_key_is_refused_with_a_hint(tmp_path) -> None:
    with pytest.raises(NoSigningKey, match="no signing key") as e:
        signing_key(tmp_path / "nothing")
    assert e.value.exit_code is ExitCode.REFUSED
    assert "registry keys init" in (e.value.hint or "")


def test_cli_keys_init_list_export_trust(cli, tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    monkeypatch.chdir(tmp_path)
    assert cli("init").exit_code == 0
    r = cli("keys", "init")
    assert r.exit_code == 0 and "keyring v1: root and signer" in r.stdout
    home = find_home()
    mine = local_keys()[0]
    assert set(trusted(home)) == {mine.keyid}
    assert not (home.ledger / "keys" / f"{mine.keyid}.pem").exists()  # private key stays out
    assert mine.keyid in cli("keys", "list").stdout  # the full id, as --json gives it
    listed = json.loads(cli("keys", "list", "--json").stdout)
    assert [k["keyid"] for k in listed["keyring"]["keys"]] == [mine.keyid]  # JSON: the same
    short = cli("init", "--home", tmp_path / "joined", "--pin", mine.keyid[:16])
    assert short.exit_code == 4 and "full 64-digit key id" in short.stderr
    assert not (tmp_path / "joined").exists() and "registry home:" not in short.stdout
    exported = cli("keys", "export")
    assert exported.stdout == mine.public_pem
    # a colleague's key, trusted from their exported PEM
    other = create_key(tmp_path / "colleague")
    (tmp_path / "colleague.pub").write_text(other.public_pem)
    r = cli("keys", "trust", tmp_path / "colleague.pub")
    assert r.exit_code == 0 and other.keyid in r.stdout
    assert set(trusted(home)) == {mine.keyid, other.keyid}
    assert "already trusted" in cli("keys", "trust", tmp_path / "colleague.pub").stdout


def test_cli_init_trusts_an_existing_key(cli, tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    key = create_key(tmp_path / "keys")
    r = cli("init", tmp_path / "proj")
    assert r.exit_code == 0 and f"root and signer {key.keyid[:12]}" in r.stdout
    assert set(trusted(find_home(tmp_path / "proj" / ".registry"))) == {key.keyid}


def test_cli_trust_rejects_a_non_key(cli, tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.setenv("REGISTRY_KEYS_DIR", str(tmp_path / "keys"))
    create_key(tmp_path / "keys")
    assert cli("init", "--home", tmp_path / "h").exit_code == 0
    (tmp_path / "bad.pub").write_text("not a key")
    r = cli("keys", "trust", tmp_path / "bad.pub", "--home", tmp_path / "h")
    assert r.exit_code == ExitCode.INVALID_INPUT and "not a PEM public key" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_without_home_exits_5(cli, tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.chdir(tmp_path)
    r = cli("list")
    assert r.exit_code == ExitCode.NOT_FOUND and "registry init" in r.stderr


def test_cli_init_folder_wins_over_the_environment(cli, tmp_path, monkeypatch, no_env) -> None:
    monkeypatch.setenv("REGISTRY_HOME", str(tmp_path / "env-home"))
    r = cli("init", tmp_path / "proj")
    assert r.exit_code == 0 and str(tmp_path / "proj" / ".registry") in r.stdout
    assert not (tmp_path / "env-home").exists()
    assert cli("init", tmp_path / "proj", "--home", tmp_path / "h").exit_code == ExitCode.USAGE
