"""`registry keys init|list|export|trust|retire|revoke|rotate|pin`: signing keys and the
ledger's keyring."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from registry.cli.app import new_app
from registry.cli.options import HomeOpt, Json, find
from registry.errors import RegistryError
from registry.formats.display import short_id

if TYPE_CHECKING:
    from registry.signing.keyring import Keyring
    from registry.store.home import Home

keys_app = new_app("Signing keys: create, list, export, trust.")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")


def check_pins(keyids: list[str]) -> None:
    """Each id a full 64-digit key id: checked before anything is written."""
    from registry.base.canonical import is_sha256
    from registry.errors import InvalidInput

    bad = [k for k in keyids if not is_sha256(k)]
    if bad:
        raise InvalidInput(f"{bad[0]!r}: a root is pinned by its full 64-digit key id",
                           hint="`registry keys list --json` on the lead's host prints it")


def pin_keys(home: Home, keyids: list[str], threshold: int) -> None:
    from registry.store.trust import pin_roots

    check_pins(keyids)
    pin_roots(home, keyids, threshold)


def start_keyring(home: Home) -> str:
    """Make the default key the root of an empty ledger; say where trust stands."""
    from registry.signing.keys import signing_key
    from registry.store.ledger import Ledger
    from registry.store.trust import current_keyring, genesis

    try:
        signer = signing_key()
    except RegistryError:
        return "no signing key yet: registry keys init"
    if Ledger(home.ledger).head() is None:
        try:
            genesis(home, signer)
        except RegistryError as e:  # a home that pinned a team's roots keeps its pin
            return e.message
        return f"keyring v1: root and signer {short_id(signer[0])} (pinned by this home)"
    try:
        ring = current_keyring(home).current
    except RegistryError as e:
        return f"ledger keyring not trusted here: {e.message}"
    role = ring.entry(signer[0])
    if role is None:
        return (f"key {short_id(signer[0])} is not in this ledger's keyring: a root holder runs "
                "`registry keys trust KEY.pub`")
    return f"key {short_id(signer[0])} is {' and '.join(role.roles)} in keyring v{ring.version}"


@keys_app.command("init")
def keys_init(home: HomeOpt = None, json: Json = False) -> None:
    """Create an Ed25519 signing key (private key 0600, outside the ledger); in a home
    with an empty ledger it becomes the keyring's root.

    Example: registry keys init
    """
    from registry.cli.output import console, print_json
    from registry.signing.keys import create_key

    key = create_key()
    try:
        status = start_keyring(find(home))
    except RegistryError:
        status = "no registry home here yet: registry init"
    if json:
        print_json({"key": key, "status": status})
        return
    console.print(f"key {key.keyid}\nprivate key: {key.private_path}\n{status}",
                  highlight=False)


@keys_app.command("list")
def keys_list(home: HomeOpt = None, json: Json = False) -> None:
    """List your signing keys and this home's verified keyring.

    Example: registry keys list --json
    """
    from registry.cli.output import console, print_json
    from registry.signing.keys import local_keys
    from registry.store.trust import current_keyring

    mine = local_keys()
    try:
        ring = current_keyring(find(home)).current
    except RegistryError:
        ring = None
    if json:
        print_json({"local": mine, "keyring": ring and _ring_json(ring),
                    "version": ring and ring.version})
        return
    ids = {k.keyid for k in mine}
    # the full 64-digit id, as --json gives it and `init --pin` needs it
    rows = [[k.keyid, ", ".join(k.roles) or "-", "active",
             "yes (default)" if any(m.default and m.keyid == k.keyid for m in mine)
             else "yes" if k.keyid in ids else ""] for k in (ring.keys if ring else [])]
    rows += [[d.keyid, "-", f"{state} v{d.version}", "yes" if d.keyid in ids else ""]
             for state, gone in (("retired", ring.retired if ring else []),
                                 ("revoked", ring.revoked if ring else [])) for d in gone
             if state == "retired" or not d.voids_past]
    rows += [[d.keyid, "-", f"revoked v{d.version}, compromised", "yes" if d.keyid in ids
              else ""] for d in (ring.revoked if ring else []) if d.voids_past]
    known = {r[0] for r in rows}
    rows += [[k.keyid, "-", "not in keyring", "yes (default)" if k.default else "yes"]
             for k in mine if k.keyid not in known]
    title = f"keyring v{ring.version}" if ring else "keys (no verified keyring)"
    # a 64-digit id leaves no room for columns at 80: each key is its id, then its facts
    lines = [title, *(f"{keyid}\n    {state}; roles: {roles}"
                      + (f"; local key{' (default)' if 'default' in local else ''}"
                         if local else "") for keyid, roles, state, local in rows)]
    console.print("\n".join(lines), highlight=False)


def _ring_json(ring: Keyring) -> dict[str, Any]:
    """The keyring as JSON, each key and departed key with its id (derived from its
    public key, so not a field of the signed document)."""
    out: dict[str, Any] = ring.model_dump(mode="json", by_alias=True)
    for field in ("keys", "retired", "revoked"):
        out[field] = [{"keyid": entry.keyid, **dumped}
                      for entry, dumped in zip(getattr(ring, field), out.get(field, []),
                                               strict=True)]
    return out


@keys_app.command("export")
def keys_export(
    keyid: Annotated[str | None, typer.Argument(
        show_default=False, help="Key id or prefix (default: your default key).")] = None,
) -> None:
    """Print a public key (PEM), for others to trust.

    Example: registry keys export > me.pub
    """
    from registry.errors import NotFound
    from registry.signing.keys import KEYS_HINT, local_keys

    keys = [k for k in local_keys() if (k.keyid.startswith(keyid) if keyid else k.default)]
    if len(keys) != 1:
        raise NotFound(f"no single local key matches {keyid or 'default'}", hint=KEYS_HINT)
    typer.echo(keys[0].public_pem, nl=False)


@keys_app.command("trust")
def keys_trust(
    pem: Annotated[Path, typer.Argument(show_default=False, help="Public key PEM file.")],
    root: Annotated[bool, typer.Option("--root", help="Also a root: may sign keyring "
                                                      "versions.")] = False,
    home: HomeOpt = None,
) -> None:
    """Trust a public key as a signer: a new keyring version, signed by your root key.

    Example: registry keys trust colleague.pub
    """
    from registry.cli.output import console
    from registry.errors import InvalidInput
    from registry.signing.keyring import Role
    from registry.store.keyring import add_key

    try:
        data = pem.read_bytes()
    except OSError as e:
        raise InvalidInput(f"{pem}: cannot read ({e.strerror})") from None
    roles = [Role.signer, Role.root] if root else [Role.signer]
    keyid, new = add_key(find(home), data, pem, roles)
    console.print(f"{'trusted' if new else 'already trusted'} key {keyid}", highlight=False)


ReasonOpt = Annotated[str, typer.Option("--reason", help="Why (kept in the keyring).")]
KeyArg = Annotated[str, typer.Argument(show_default=False, help="Key id or prefix.")]


@keys_app.command("retire")
def keys_retire(keyid: KeyArg, reason: ReasonOpt, home: HomeOpt = None) -> None:
    """Retire a key: it signs nothing new; records it signed while trusted stay valid.

    Example: registry keys retire 3f2a9c41 --reason "left the team"
    """
    from registry.cli.output import console
    from registry.store.keyring import remove_key

    gone = remove_key(find(home), keyid, reason, revoke=False)
    console.print(f"retired key {gone}", highlight=False)


@keys_app.command("revoke")
def keys_revoke(keyid: KeyArg, reason: ReasonOpt, home: HomeOpt = None,
                compromised: Annotated[bool, typer.Option(
                    "--compromised", help="Someone else may hold the key: untrust everything "
                    "it ever signed, records from before the revocation too.")] = False,
                ) -> None:
    """Revoke a key: never trusted again. What it signed before this keyring version
    still verifies, marked as signed by a key revoked since; with --compromised,
    nothing it ever signed is trusted.

    Example: registry keys revoke 3f2a9c41 --reason "laptop stolen" --compromised
    """
    from registry.cli.output import console
    from registry.store.keyring import remove_key

    gone = remove_key(find(home), keyid, reason, revoke=True, compromised=compromised)
    what = "nothing it ever signed is trusted" if compromised else \
        "records it signs from now on are untrusted; earlier ones still verify"
    console.print(f"revoked key {gone}: {what}", highlight=False)


@keys_app.command("rotate")
def keys_rotate(home: HomeOpt = None) -> None:
    """Make a new default key with your key's roles and retire the old one.

    Example: registry keys rotate
    """
    from registry.cli.output import console
    from registry.store.keyring import rotate_key

    new = rotate_key(find(home))
    console.print(f"new default key {new}; the old key is retired", highlight=False)


@keys_app.command("pin")
def keyspin_keys(
    keyids: Annotated[list[str], typer.Argument(show_default=False,
                                                help="Full key ids of the ledger's roots.")],
    threshold: Annotated[int, typer.Option(min=1, help="Root signatures needed.")] = 1,
    home: HomeOpt = None,
) -> None:
    """Pin the root keys this home trusts for a ledger it did not start (a clone).

    Example: registry keys pin 3f2a9c41...e0 --home team/.registry
    """
    from registry.cli.output import console
    from registry.store.trust import current_keyring

    target = find(home)
    pin_keys(target, keyids, threshold)
    ring = current_keyring(target).current
    console.print(f"pinned {len(keyids)} root key(s); keyring v{ring.version} verifies",
                  highlight=False)
