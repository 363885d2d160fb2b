"""Changes to a ledger's keyring: trust a key, retire it, revoke it, rotate the
default key. Each is a new keyring version (registry.signing.keyring), signed by the
local root keys, committed in one transaction and pinned by this home.
"""

from __future__ import annotations

from collections.abc import Callable

from registry.errors import NotFound, Refused, VerificationFailed
from registry.formats.display import short_id
from registry.signing.keyring import (
    Departed,
    KeyEntry,
    Keyring,
    Role,
    file_name,
    sign_version,
    verify_chain,
)
from registry.signing.keys import Signer, load_public_pem, public_pem
from registry.store.home import Home
from registry.store.ledger import Ledger
from registry.store.transaction import transaction
from registry.store.trust import current_keyring, keyring_files, load_state


def change_keyring(home: Home, edit: Callable[[Keyring], Keyring], message: str,
                   signers: list[Signer]) -> Keyring:
    """A new keyring version: `edit` of the current one, signed by every local key
    that is a root of either version (a threshold of each must sign), committed by
    the first signer. Call inside `transaction(home)`."""
    ledger = Ledger(home.ledger)
    files = keyring_files(ledger)
    state = load_state(home)
    chain = verify_chain(files, state.pin)
    old = chain.current
    new = edit(old).model_copy(update={"version": old.version + 1})
    roots = {*old.roots, *new.roots}
    usable = [s for s in signers if s[0] in roots]
    if not usable:
        raise Refused(f"none of your keys is a root of keyring version {old.version}",
                      hint="keyring changes are signed by root keys: ask a root holder")
    data = sign_version(new, usable)
    try:
        verify_chain({**files, new.version: data}, state.pin)
    except VerificationFailed as e:
        raise Refused(f"keyring version {new.version} not made: {e.message.partition(': ')[2]}",
                      hint="a threshold of root keys must sign: hold them locally") from None
    ledger.commit({file_name(new.version): data}, f"keyring v{new.version}: {message}",
                  usable[0])
    current_keyring(home)  # verifies the new version from the pin, and pins it
    return new


def _locked_change(home: Home, edit: Callable[[Keyring], Keyring], message: str) -> Keyring:
    from registry.signing.keys import local_signers

    with transaction(home):
        return change_keyring(home, edit, message, local_signers())


def add_key(home: Home, pem: bytes, source: object, roles: list[Role]) -> tuple[str, bool]:
    """Trust a public key (a new keyring version); (key id, whether anything changed)."""
    public = public_pem(load_public_pem(pem, source))
    entry = KeyEntry(public=public, roles=sorted(set(roles)))
    current = current_keyring(home).current
    old = current.entry(entry.keyid)
    if old is not None and set(old.roles) >= set(roles):
        return entry.keyid, False
    if current.revocation(entry.keyid):
        raise Refused(f"key {short_id(entry.keyid)} was revoked; a revoked key is never trusted "
                      "again")

    def edit(ring: Keyring) -> Keyring:
        keys = [k for k in ring.keys if k.keyid != entry.keyid]
        merged = sorted({*roles, *(old.roles if old else [])})
        return ring.model_copy(update={"keys": [*keys, entry.model_copy(
            update={"roles": merged})]})

    _locked_change(home, edit, f"trust {short_id(entry.keyid)} as {', '.join(roles)}")
    return entry.keyid, True


def remove_key(home: Home, prefix: str, reason: str, *, revoke: bool,
               compromised: bool = False) -> str:
    """Retire (rotation: its records stay valid) or revoke a key (never trusted again:
    what it signed before this version still verifies, marked; with `compromised`,
    nothing it ever signed is trusted); returns its id."""
    current = current_keyring(home).current
    if revoke and (left := _departed(current, prefix, compromised)) is not None:
        return _revoke_departed(home, left, reason, compromised)
    found = [k for k in current.keys if k.keyid.startswith(prefix.lower())] if prefix else []
    if len(found) != 1:
        raise NotFound(f"no single key in the keyring matches {prefix!r}",
                       hint="registry keys list shows the keyring")
    entry = found[0]

    def edit(ring: Keyring) -> Keyring:
        gone = Departed(public=entry.public, version=ring.version + 1, reason=reason,
                        compromised=compromised if revoke else None)
        keys = [k for k in ring.keys if k.keyid != entry.keyid]
        field = "revoked" if revoke else "retired"
        return ring.model_copy(update={"keys": keys, field: [*getattr(ring, field), gone]})

    verb = ("revoke compromised" if compromised else "revoke") if revoke else "retire"
    _locked_change(home, edit, f"{verb} {short_id(entry.keyid)}: {reason}")
    return entry.keyid


def _departed(ring: Keyring, prefix: str, compromised: bool) -> Departed | None:
    """The one key that already left `ring` and that this revocation still widens: a
    retired key (now revoked), or one revoked from a version on (now compromised)."""
    if not prefix:
        return None
    found = [d for d in (*ring.retired, *(r for r in ring.revoked if compromised
                                          and not r.voids_past))
             if d.keyid.startswith(prefix.lower())]
    return found[0] if len(found) == 1 else None


def _revoke_departed(home: Home, left: Departed, reason: str, compromised: bool) -> str:
    def edit(ring: Keyring) -> Keyring:
        gone = Departed(public=left.public, version=ring.version + 1, reason=reason,
                        compromised=compromised)
        revoked = [d for d in ring.revoked if d.keyid != left.keyid]
        retired = [d for d in ring.retired if d.keyid != left.keyid]
        return ring.model_copy(update={"revoked": [*revoked, gone], "retired": retired})

    verb = "revoke compromised" if compromised else "revoke"
    _locked_change(home, edit, f"{verb} {short_id(left.keyid)}: {reason}")
    return left.keyid


def rotate_key(home: Home) -> str:
    """A new local key takes over the default key's roles; the old one is retired (its
    records stay valid). Returns the new key id."""
    from registry.signing.keys import create_key, default_keyid

    old = default_keyid()
    current = current_keyring(home).current
    entry = current.entry(old or "")
    if entry is None:
        raise Refused("your default key is not in this ledger's keyring: nothing to rotate")
    new = create_key()
    add_key(home, new.public_pem.encode(), new.private_path, list(entry.roles))
    remove_key(home, entry.keyid, f"rotated to {short_id(new.keyid)}", revoke=False)
    return new.keyid
