"""Signed ledger commits.

Every commit the registry makes carries, as the last line of its message,
`Registry-Signature: <keyid> <base64 Ed25519 signature>` over the canonical JSON of
`{"_type": "registry.commit/v1", "tree", "parents", "author", "committer", "message"}`
— every byte of the commit object but the signature line itself. The tree id covers
every file (git's Merkle tree), the parent ids the whole history before it. A commit
with any other header (an encoding, a gpgsig, a mergetag) is not one of ours.

Why not git's own SSH signing: verifying 10,000 commits would start 10,000
`ssh-keygen` processes; here one `git cat-file --batch` reads them all and the
signatures are checked in process.
"""

import base64
import binascii
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from registry.base.canonical import canonical_bytes
from registry.base.model import Frozen
from registry.signing.keys import Signer

TRAILER = "Registry-Signature: "
_TRAILER_LINE = re.compile(r"\n\nRegistry-Signature: ([0-9a-f]{64}) ([A-Za-z0-9+/=]+)\n\Z")
PERSON = "registry <registry@localhost>"


class Commit(Frozen):
    """One commit object, parsed exactly."""
    sha: str
    tree: str
    parents: list[str]
    author: str
    committer: str
    message: str  # without the signature line
    keyid: str | None  # the key the signature line names (a claim until verified)
    signature: bytes | None
    foreign: str | None  # why this is not a registry commit, if it is not

    def verifies(self, key: Ed25519PublicKey) -> bool:
        if self.signature is None or self.foreign:
            return False
        try:
            key.verify(self.signature, payload(self.tree, self.parents, self.author,
                                               self.committer, self.message))
            return True
        except InvalidSignature:
            return False


def payload(tree: str, parents: list[str], author: str, committer: str, message: str) -> bytes:
    return canonical_bytes({"_type": "registry.commit/v1", "tree": tree, "parents": parents,
                            "author": author, "committer": committer, "message": message})


def signed_message(message: str, tree: str, parents: list[str], person: str,
                   signer: Signer) -> str:
    """The full commit message: `message`, then its signature line."""
    keyid, key = signer
    sig = key.sign(payload(tree, parents, person, person, message))
    return f"{message}\n\n{TRAILER}{keyid} {base64.b64encode(sig).decode()}\n"


def commit_bytes(tree: str, parents: list[str], person: str, message: str) -> bytes:
    """A commit object's content, exactly as `parse_commit` reads it back."""
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
    return f"{head}author {person}\ncommitter {person}\n\n{message}".encode()


def parse_commit(sha: str, raw: bytes) -> Commit:
    text = raw.decode("utf-8", errors="replace")
    head, sep, body = text.partition("\n\n")
    fields: dict[str, list[str]] = {}
    for line in head.split("\n"):
        name, _, value = line.partition(" ")
        fields.setdefault(name, []).append(value)
    foreign = None
    if not sep or set(fields) - {"tree", "parent", "author", "committer"}:
        foreign = "has headers a registry commit does not have"
    elif len(fields.get("tree", [])) != 1 or len(fields.get("author", [])) != 1 \
            or len(fields.get("committer", [])) != 1:
        foreign = "is not a well-formed commit"
    match = _TRAILER_LINE.search(body)
    keyid = signature = None
    if match:
        keyid = match.group(1)
        try:
            signature = base64.b64decode(match.group(2), validate=True)
        except (binascii.Error, ValueError):
            signature = None
    return Commit(sha=sha, tree=_one(fields, "tree"), parents=fields.get("parent", []),
                  author=_one(fields, "author"), committer=_one(fields, "committer"),
                  message=body[:match.start()] if match else body, keyid=keyid,
                  signature=signature, foreign=foreign)


def _one(fields: dict[str, list[str]], name: str) -> str:
    values = fields.get(name) or [""]
    return values[0]
