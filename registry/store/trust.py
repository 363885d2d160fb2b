"""A home's root of trust: `trust.json` in the home, beside (never inside) the ledger.

It pins the keyring version the home last verified (number and digest, with its root
key ids) and the ledger head it last verified. A ledger commit cannot change it; only
this home's own commands move it forward, and only after verifying what they move to.
Like `~/.ssh/known_hosts`, it is as safe as the home folder itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import Field, ValidationError

from registry.base.canonical import sha256_hex
from registry.base.files import write_model
from registry.base.model import Frozen
from registry.errors import (
    InvalidInput,
    NotFound,
    Refused,
    RegistryError,
    Unverifiable,
    VerificationFailed,
)
from registry.signing.keyring import (
    FOLDER,
    VERSION_FILE,
    Chain,
    Departed,
    KeyEntry,
    Keyring,
    Pin,
    Role,
    file_name,
    sign_version,
    verify_chain,
)
from registry.signing.keys import Signer, load_public_pem, public_pem
from registry.store.home import Home
from registry.store.ledger import BRANCH, Ledger
from registry.store.lock import exclusive

FILE = "trust.json"
PIN_HINT = ("pin the ledger's root keys first: registry keys pin KEYID "
            "(ask the ledger's owner for their key id)")


class TrustState(Frozen):
    pin: Pin
    head: str | None = None  # the last ledger commit whose history verified
    remotes: dict[str, str] = Field(default_factory=dict)  # remote -> its last verified head


def path_of(home: Home) -> Path:
    return home.root / FILE


def load_state(home: Home) -> TrustState:
    path = path_of(home)
    try:
        return TrustState.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise Unverifiable(f"{home.root} has no root of trust ({FILE})", hint=PIN_HINT) from None
    except (OSError, ValueError, ValidationError) as e:
        raise InvalidInput(f"{path}: not a trust state ({str(e).splitlines()[0]})",
                           hint="restore it, or pin again: registry keys pin KEYID") from None


def save_state(home: Home, state: TrustState) -> None:
    write_model(path_of(home), state)


def pin_roots(home: Home, roots: list[str], threshold: int = 1) -> TrustState:
    """Trust a ledger's first keyring version if a threshold of these keys signed it."""
    state = TrustState(pin=Pin(roots=sorted(roots), threshold=threshold))
    save_state(home, state)
    return state


def advance(home: Home, state: TrustState, chain: Chain, head: str | None = None) -> TrustState:
    """Move the pin to the newest verified keyring version (and the head, when given).
    Call holding the home lock, with `state` read under it."""
    new = TrustState(pin=pin_of(chain), head=head or state.head, remotes=state.remotes)
    if new != state:
        save_state(home, new)
    return new


def pin_of(chain: Chain) -> Pin:
    """The pin of a chain's newest version."""
    top = max(chain.versions)
    current = chain.current
    return Pin(roots=sorted(current.roots), threshold=current.threshold, version=top,
               sha256=chain.digests[top])


def keyring_files(ledger: Ledger, ref: str = BRANCH) -> dict[int, bytes]:
    """version -> committed envelope bytes of every keyring version at `ref` (HEAD)."""
    shas = {int(m.group(1)): sha for path, sha in ledger.tree_files(FOLDER, ref).items()
            if (m := VERSION_FILE.match(path))}
    blobs = ledger.blobs(list(shas.values()))
    return {version: blobs.get(sha, b"") for version, sha in shas.items()}


_verified: dict[tuple[Path, str | None, str], Chain] = {}  # per process: readers ask often


def current_keyring(home: Home) -> Chain:
    """The ledger's keyring, verified from this home's pin (which moves forward to it);
    checked once per process for one ledger head and pin."""
    state = load_state(home)
    chain = _chain(home, state)
    if pin_of(chain) != state.pin:
        remember(home, state, chain)
    return chain


def remember(home: Home, seen: TrustState, chain: Chain, head: str | None = None) -> None:
    """Move the pin (and the head, when given) to what a reader verified from `seen`.

    Written under the home lock from the state read under it, so a reader never
    overwrites what a writer saved meanwhile (a pull's remote heads: its rollback
    memory); skipped when the home moved past what the reader verified."""
    with exclusive(home.lock_file):
        fresh = load_state(home)
        top = max(chain.versions)
        if fresh.pin.version > top or (fresh.pin.version and
                                       chain.digests.get(fresh.pin.version) != fresh.pin.sha256):
            return
        advance(home, fresh, chain, head=head if fresh.head == seen.head else None)


def _chain(home: Home, state: TrustState) -> Chain:
    ledger = Ledger(home.ledger)
    key = (home.root, ledger.head(), state.pin.model_dump_json())
    chain = _verified.get(key)
    if chain is None:
        chain = verify_chain(keyring_files(ledger), state.pin)
        _verified[key] = chain
    return chain


def appended(home: Home, before: str | None, after: str) -> None:
    """This home just appended signed commit `after` to `before`: when `before` was the
    head it last verified, `after` is now (nobody else's commit slipped in between)."""
    try:
        state = load_state(home)
    except RegistryError:
        return
    if state.head == before:
        save_state(home, state.model_copy(update={"head": after}))


def genesis(home: Home, signer: Signer) -> Keyring:
    """The first keyring of an empty ledger: the signer is its root and signer, and
    this home pins it."""
    keyid, key = signer
    keyring = Keyring(version=1, keys=[KeyEntry(public=public_pem(key.public_key()),
                                                roles=[Role.root, Role.signer])])
    data = sign_version(keyring, [signer])
    commit = Ledger(home.ledger).commit({file_name(1): data}, "keyring v1: root "
                                        f"{keyid[:16]}", signer)
    pin = Pin(roots=[keyid], version=1, sha256=sha256_hex(data))
    save_state(home, TrustState(pin=pin, head=commit))
    return keyring


def change_keyring(home: Home, edit: Callable[[Keyring], Keyring], message: str,
                   signers: list[Signer]) -> Keyring:
    """A new keyring version: `edit` of the current one, signed by every local key
    that is a root of either version (a threshold of each must sign), committed by
    the first signer. Call holding the home lock."""
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
    before = ledger.head()
    commit = ledger.commit({file_name(new.version): data}, f"keyring v{new.version}: {message}",
                           usable[0])
    appended(home, before, commit)
    current_keyring(home)  # verifies the new version from the pin, and pins it
    return new


def _locked_change(home: Home, edit: Callable[[Keyring], Keyring], message: str) -> Keyring:
    from registry.signing.keys import local_signers

    with exclusive(home.lock_file):
        Ledger(home.ledger).recover()
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
        raise Refused(f"key {entry.keyid[:16]} was revoked; a revoked key is never trusted again")

    def edit(ring: Keyring) -> Keyring:
        keys = [k for k in ring.keys if k.keyid != entry.keyid]
        merged = sorted({*roles, *(old.roles if old else [])})
        return ring.model_copy(update={"keys": [*keys, entry.model_copy(
            update={"roles": merged})]})

    _locked_change(home, edit, f"trust {entry.keyid[:16]} as {', '.join(roles)}")
    return entry.keyid, True


def remove_key(home: Home, prefix: str, reason: str, *, revoke: bool) -> str:
    """Retire (rotation: its records stay valid) or revoke (compromise: nothing it
    signed is trusted) a key; returns its id."""
    current = current_keyring(home).current
    found = [k for k in current.keys if k.keyid.startswith(prefix.lower())] if prefix else []
    if len(found) != 1:
        raise NotFound(f"no single key in the keyring matches {prefix!r}",
                       hint="registry keys list shows the keyring")
    entry = found[0]

    def edit(ring: Keyring) -> Keyring:
        gone = Departed(public=entry.public, version=ring.version + 1, reason=reason)
        keys = [k for k in ring.keys if k.keyid != entry.keyid]
        field = "revoked" if revoke else "retired"
        return ring.model_copy(update={"keys": keys, field: [*getattr(ring, field), gone]})

    _locked_change(home, edit, f"{'revoke' if revoke else 'retire'} {entry.keyid[:16]}: {reason}")
    return entry.keyid


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
    remove_key(home, entry.keyid, f"rotated to {new.keyid[:16]}", revoke=False)
    return new.keyid
