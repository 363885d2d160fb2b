"""Which keys this home trusts as the lab's: `lab-keys.json` in the home (beside
`trust.json`, never in the ledger, so no ledger writer can make itself the lab), else
the keyring's root keys (the ledger's owner is the lab). A lab key counts only while
the keyring lets it sign records."""

from __future__ import annotations

import json

from registry.base.files import write_bytes
from registry.base.safeload import loads_json
from registry.errors import InvalidInput
from registry.formats.display import short_id
from registry.store.home import Home

FILE = "lab-keys.json"


def lab_keys(home: Home) -> set[str]:
    """The key ids that sign as the lab and may sign records now."""
    from registry.store.trust import current_keyring

    ring = current_keyring(home).current
    signers = set(ring.record_keys())
    path = home.root / FILE
    if not path.is_file():
        return set(ring.roots) & signers
    try:
        listed = loads_json(path.read_bytes())
    except ValueError as e:
        raise InvalidInput(f"{path}: not JSON ({e})", hint="registry claim lab-key KEYID") from None
    if not isinstance(listed, list) or not all(isinstance(k, str) for k in listed):
        raise InvalidInput(f"{path}: expected a list of key ids")
    return set(listed) & signers


def set_lab_keys(home: Home, keyids: list[str]) -> list[str]:
    """Trust exactly `keyids` (full ids of keyring signers) as the lab's keys."""
    from registry.store.trust import current_keyring

    signers = set(current_keyring(home).current.record_keys())
    unknown = [k for k in keyids if k not in signers]
    if unknown:
        raise InvalidInput(f"key {short_id(unknown[0])} is not a signer in this home's keyring",
                           hint="registry keys list shows the keys")
    write_bytes(home.root / FILE, json.dumps(sorted(set(keyids))).encode())
    return sorted(set(keyids))
