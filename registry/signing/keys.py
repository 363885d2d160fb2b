"""Ed25519 signing keys.

Private keys live outside the ledger, one PEM per key (mode 0600) in the keys
directory: `$REGISTRY_KEYS_DIR`, else `$XDG_CONFIG_HOME/registry/keys`, else
`~/.config/registry/keys`. The file `default` there names the key that signs.
A key id is the sha256 (hex) of the raw 32-byte public key. Which keys a ledger
trusts is its signed keyring (registry/signing/keyring.py), checked against the root of
trust the home pins (registry/store/trust.py).
"""

import base64
import binascii
import hashlib
import os
import tempfile
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from registry.base.canonical import is_sha256
from registry.base.model import Frozen
from registry.errors import InvalidInput, Refused
from registry.formats.display import short_id

ENV_KEYS_DIR = "REGISTRY_KEYS_DIR"
DEFAULT = "default"
KEYS_HINT = "run `registry keys init` to create a signing key"
PEM_LINES = (b"-----BEGIN PUBLIC KEY-----", b"-----END PUBLIC KEY-----")
SPKI_ED25519 = bytes.fromhex("302a300506032b6570032100")  # RFC 8410: the DER before the key


Signer = tuple[str, Ed25519PrivateKey]  # (key id, private key)


class KeyInfo(Frozen):
    keyid: str
    public_pem: str
    private_path: str | None = None
    default: bool = False


class NoSigningKey(Refused):
    """Nothing can be sealed without a key: refused, with the command that makes one."""


def keys_dir() -> Path:
    if os.environ.get(ENV_KEYS_DIR):
        return Path(os.environ[ENV_KEYS_DIR])
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "registry" / "keys"


def key_id(public: Ed25519PublicKey) -> str:
    return hashlib.sha256(public.public_bytes_raw()).hexdigest()


def public_pem(public: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization  # not on the read paths
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def load_public_pem(data: bytes, source: object) -> Ed25519PublicKey:
    raw = _raw_ed25519(data)
    if raw is not None:
        return Ed25519PublicKey.from_public_bytes(raw)
    from cryptography.hazmat.primitives import serialization  # costs a reader 7 ms
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise InvalidInput(f"{source}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput(f"{source}: not an Ed25519 public key",
                           hint="registry signs with Ed25519")
    return key


def _raw_ed25519(data: bytes) -> bytes | None:
    """The raw key of a PEM written as `public_pem` writes one (an Ed25519
    SubjectPublicKeyInfo, in one base64 line); None for any other text, which the
    general PEM parser then judges. Every keyring entry is written this way, so a
    reader checks signatures without importing cryptography's serialization package."""
    lines = data.strip().split(b"\n")
    if len(lines) != 3 or (lines[0], lines[2]) != PEM_LINES:
        return None
    try:
        der = base64.b64decode(lines[1], validate=True)
    except binascii.Error:
        return None
    return der[len(SPKI_ED25519):] if len(der) == 44 and der.startswith(SPKI_ED25519) else None


def create_key(directory: Path | None = None) -> KeyInfo:
    """A new Ed25519 key, written 0600, made the default."""
    from cryptography.hazmat.primitives import serialization  # not on the read paths
    directory = directory or keys_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    private = Ed25519PrivateKey.generate()
    keyid = key_id(private.public_key())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    path = directory / f"{keyid}.pem"
    _write_private(path, pem)
    _write_private(directory / DEFAULT, f"{keyid}\n".encode())
    return KeyInfo(keyid=keyid, public_pem=public_pem(private.public_key()),
                   private_path=str(path), default=True)


def _write_private(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)  # mkstemp makes it 0600
    try:
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # never leave a copy of a private key behind
        raise


def default_keyid(directory: Path | None = None) -> str | None:
    """The key id the `default` file names, if it names one (64 hex digits)."""
    marker = (directory or keys_dir()) / DEFAULT
    try:
        keyid = marker.read_bytes()[:200].decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return keyid if is_sha256(keyid) else None


def check_private_file(path: Path) -> None:
    """Refuse a private key file that others may read or that another user owns, as
    ssh does: whoever can read it can sign as its owner."""
    try:
        st = path.stat()
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read the private key ({e.strerror})") from None
    if st.st_mode & 0o077 or st.st_uid != os.getuid():
        raise Refused(f"{path}: private key is accessible by others (mode "
                      f"{st.st_mode & 0o777:04o}, owner uid {st.st_uid}): refused",
                      hint=f"chmod 600 {path}  (and keep it owned by you)")


def load_private(path: Path) -> Ed25519PrivateKey:
    """An Ed25519 private key file, refused when others may read it or it is no key."""
    from cryptography.hazmat.primitives import serialization  # not on the read paths
    check_private_file(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except OSError as e:
        raise InvalidInput(f"{path}: cannot read the private key ({e.strerror})") from None
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise InvalidInput(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(f"{path}: not an Ed25519 private key", hint=KEYS_HINT)
    return key


def signing_key(directory: Path | None = None) -> Signer:
    """The default signing key and its id, or NoSigningKey with the fix."""
    directory = directory or keys_dir()
    keyid = default_keyid(directory)
    path = directory / f"{keyid}.pem"
    if not keyid or not path.is_file():
        raise NoSigningKey(f"no signing key in {directory}", hint=KEYS_HINT)
    key = load_private(path)
    if key_id(key.public_key()) != keyid:
        raise InvalidInput(f"{path}: not the Ed25519 key {short_id(keyid)}", hint=KEYS_HINT)
    return keyid, key


def local_keys(directory: Path | None = None) -> list[KeyInfo]:
    directory = directory or keys_dir()
    default = default_keyid(directory)
    out = []
    for path in sorted(directory.glob("*.pem")) if directory.is_dir() else []:
        public = load_private(path).public_key()
        keyid = key_id(public)
        out.append(KeyInfo(keyid=keyid, public_pem=public_pem(public), private_path=str(path),
                           default=keyid == default))
    return out


def local_signers(directory: Path | None = None) -> list[Signer]:
    """Every local private key, the default first (for keyring versions that need
    several root signatures)."""
    from cryptography.hazmat.primitives import serialization  # not on the read paths
    directory = directory or keys_dir()
    default = default_keyid(directory)
    out: list[Signer] = []
    for info in local_keys(directory):
        key = serialization.load_pem_private_key(Path(info.private_path or "").read_bytes(),
                                                 password=None)
        if isinstance(key, Ed25519PrivateKey):
            out.append((info.keyid, key))
    return sorted(out, key=lambda s: s[0] != default)
