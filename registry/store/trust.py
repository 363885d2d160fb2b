"""A home's root of trust: `trust.json` in the home, beside (never inside) the ledger.

It pins the keyring version the home last verified (number and digest, with its root
key ids) and the ledger head it last verified. A ledger commit cannot change it; only
this home's own commands move it forward, and only after verifying what they move to.
Like `~/.ssh/known_hosts`, it is as safe as the home folder itself: a trust.json that
others can write draws a warning on every command that reads it.
"""

import os
import warnings
from pathlib import Path

from pydantic import Field, ValidationError

from registry.base.canonical import sha256_hex
from registry.base.files import write_model
from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused, RegistryError, RegistryWarning, Unverifiable
from registry.formats.display import short_id
from registry.signing.keyring import (
    FOLDER,
    VERSION_FILE,
    Chain,
    KeyEntry,
    Keyring,
    Pin,
    Role,
    file_name,
    sign_version,
    verify_chain,
)
from registry.signing.keys import Signer, public_pem
from registry.store.home import Home
from registry.store.ledger import BRANCH, Ledger
from registry.store.lock import exclusive

FILE = "trust.json"
PIN_HINT = ("pin the ledger's root keys first: registry keys pin KEYID "
            "(ask the ledger's owner for their key id)")
START_HINT = ("a home of your own: registry keys init, then registry init again (it signs "
              "keyring v1 with your key); to read a team's ledger: registry keys pin KEYID")


class TrustState(Frozen):
    pin: Pin
    head: str | None = None  # the last ledger commit whose history verified
    remotes: dict[str, str] = Field(default_factory=dict)  # remote -> its last verified head


def path_of(home: Home) -> Path:
    return home.root / FILE


def load_state(home: Home) -> TrustState:
    path = path_of(home)
    try:
        data = path.read_bytes()
        _check_mode(path)
        return TrustState.model_validate_json(data)
    except FileNotFoundError:
        hint = PIN_HINT if Ledger(home.ledger).head() else START_HINT  # empty: nothing to pin
        raise Unverifiable(f"{home.root} has no root of trust ({FILE})", hint=hint) from None
    except (OSError, ValueError, ValidationError) as e:
        raise InvalidInput(f"{path}: not a trust state ({str(e).splitlines()[0]})",
                           hint="restore it, or pin again: registry keys pin KEYID") from None


_warned: set[Path] = set()


def _check_mode(path: Path) -> None:
    """Warn (once per process) when others could write this home's root of trust:
    whoever can write trust.json decides which keys this home trusts."""
    st = path.stat()
    if path in _warned or not (st.st_mode & 0o022 or st.st_uid != os.getuid()):
        return
    _warned.add(path)
    warnings.warn(f"{path} is writable by others (mode {st.st_mode & 0o777:04o}, owner uid "
                  f"{st.st_uid}): whoever can write it decides which keys this home trusts; "
                  f"chmod 600 {path}", RegistryWarning, stacklevel=2)


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
    """version -> committed envelope bytes of every keyring version at `ref` (HEAD):
    at HEAD, read where the working tree holds the committed bytes (one git process
    fewer for every reader)."""
    tree = ledger.tree_files(FOLDER, ref)
    paths = {int(m.group(1)): path for path in tree if (m := VERSION_FILE.match(path))}
    if ref == BRANCH:
        data = ledger.committed_files({path: tree[path] for path in paths.values()})
        return {version: data[path] for version, path in paths.items()}
    blobs = ledger.blobs([tree[path] for path in paths.values()])
    return {version: blobs.get(tree[path], b"") for version, path in paths.items()}


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
    this home pins it. Refused in a home that pinned other roots (`init --pin`: it
    joins a team's ledger, which it must pull, not replace)."""
    keyid, key = signer
    if path_of(home).exists():
        pinned = load_state(home).pin
        if pinned.roots and keyid not in pinned.roots:
            raise Refused(f"{home.root} pins root key {short_id(pinned.roots[0])} (a team's "
                          "ledger): this key does not start a keyring of its own here",
                          hint="registry pull brings the team's keyring; then a root holder "
                               "trusts your key (registry keys export)")
    keyring = Keyring(version=1, keys=[KeyEntry(public=public_pem(key.public_key()),
                                                roles=[Role.root, Role.signer])])
    data = sign_version(keyring, [signer])
    commit = Ledger(home.ledger).commit({file_name(1): data}, "keyring v1: root "
                                        f"{short_id(keyid)}", signer)
    pin = Pin(roots=[keyid], version=1, sha256=sha256_hex(data))
    save_state(home, TrustState(pin=pin, head=commit))
    return keyring
