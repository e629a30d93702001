"""The node's key file: the only place a private key is ever written.

Format: a small JSON document (so a person can see what it is without tools)::

    {"format": "meshnode-key/1", "algorithm": "ed25519", "did": "did:key:z6Mk...",
     "encryption": "none", "seed": "<base64 of the 32-byte seed>"}

or, encrypted at rest with a passphrase (Argon2id key derivation, then
XSalsa20-Poly1305 secretbox from libsodium)::

    {..., "encryption": "argon2id+xsalsa20poly1305",
     "kdf": {"salt": "<b64>", "opslimit": 3, "memlimit": 268435456},
     "ciphertext": "<b64 of nonce + box>"}

The file is created with mode 0600 (atomically: temp file, fsync, rename) and
refused at load time when group or others may read it. The DID in the file is
checked against the key it holds.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

from meshnode.base.errors import KeyFileError
from meshnode.base.identity.keys import NodeKey

FORMAT = "meshnode-key/1"
ENCRYPTION = "argon2id+xsalsa20poly1305"
PASSPHRASE_ENV = "MESHNODE_KEY_PASSPHRASE"
MAX_KEY_FILE_BYTES = 4096
# libsodium's sizes and its "moderate" Argon2id profile (about a second and 256 MiB here), spelled out
# so that a plain key file is read without loading PyNaCl's password hashing (tests check they agree)
DEFAULT_OPSLIMIT = 3  # nacl.pwhash.argon2id.OPSLIMIT_MODERATE
DEFAULT_MEMLIMIT = 256 * 1024 * 1024  # nacl.pwhash.argon2id.MEMLIMIT_MODERATE
MAX_MEMLIMIT = 1 << 30
SALT_BYTES = 16  # nacl.pwhash.argon2id.SALTBYTES
BOX_KEY_BYTES = 32  # nacl.secret.SecretBox.KEY_SIZE
SEALED_SEED_BYTES = 24 + 16 + 32  # SecretBox.NONCE_SIZE + SecretBox.MACBYTES + the seed


def write_key_file(path: Path, key: NodeKey, passphrase: str | None = None, *,
                   opslimit: int = DEFAULT_OPSLIMIT, memlimit: int = DEFAULT_MEMLIMIT) -> None:
    """Write ``key`` to ``path`` (mode 0600); refuses to overwrite an existing file."""
    path = Path(path)
    if path.exists():
        raise KeyFileError("key_exists", f"{path} already exists; refusing to overwrite a node key")
    doc: dict = {"format": FORMAT, "algorithm": "ed25519", "did": key.did}
    if passphrase:
        import nacl.pwhash
        import nacl.secret
        import nacl.utils

        salt = nacl.utils.random(SALT_BYTES)
        box_key = nacl.pwhash.argon2id.kdf(BOX_KEY_BYTES, passphrase.encode("utf-8"), salt,
                                           opslimit=opslimit, memlimit=memlimit)
        sealed = bytes(nacl.secret.SecretBox(box_key).encrypt(key.seed()))
        doc.update(encryption=ENCRYPTION, kdf={"salt": _b64(salt), "opslimit": opslimit, "memlimit": memlimit},
                   ciphertext=_b64(sealed))
    else:
        doc.update(encryption="none", seed=_b64(key.seed()))
    data = (json.dumps(doc, indent=2) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        # link, not rename: it fails if another process created the key meanwhile,
        # so two concurrent `init`s can never silently replace each other's key
        os.link(tmp, path)
    except FileExistsError:
        raise KeyFileError("key_exists", f"{path} already exists; refusing to overwrite a node key") from None
    finally:
        os.unlink(tmp)
    _fsync_dir(path.parent)


def key_file_is_encrypted(path: Path) -> bool:
    return _read_doc(Path(path)).get("encryption") == ENCRYPTION


def load_key_file(path: Path, passphrase: str | None = None) -> NodeKey:
    """Load and check the node key. Raises KeyFileError with a fix-it message on any problem."""
    path = Path(path)
    check_permissions(path)
    doc = _read_doc(path)
    encryption = doc.get("encryption")
    if encryption == "none":
        seed = _unb64(doc.get("seed"), path, "seed")
    elif encryption == ENCRYPTION:
        if not passphrase:
            raise KeyFileError(
                "passphrase_needed",
                f"{path} is encrypted: set {PASSPHRASE_ENV} or run from a terminal to be asked for the passphrase",
            )
        kdf = doc.get("kdf")
        if not isinstance(kdf, dict) or not all(isinstance(kdf.get(k), int) for k in ("opslimit", "memlimit")):
            raise KeyFileError("corrupt_key_file", f"{path}: kdf parameters are missing")
        # bounded so a tampered file cannot make unlocking take gigabytes or minutes
        if not (1 <= kdf["opslimit"] <= 64 and 8192 <= kdf["memlimit"] <= MAX_MEMLIMIT):
            raise KeyFileError("corrupt_key_file", f"{path}: kdf parameters are out of range")
        salt = _unb64(kdf.get("salt"), path, "kdf.salt")
        sealed = _unb64(doc.get("ciphertext"), path, "ciphertext")
        if len(salt) != SALT_BYTES or len(sealed) != SEALED_SEED_BYTES:
            raise KeyFileError("corrupt_key_file", f"{path}: salt or ciphertext has the wrong length (damaged file)")
        import nacl.exceptions
        import nacl.pwhash
        import nacl.secret

        try:
            box_key = nacl.pwhash.argon2id.kdf(BOX_KEY_BYTES, passphrase.encode("utf-8"), salt,
                                               opslimit=kdf["opslimit"], memlimit=kdf["memlimit"])
            seed = nacl.secret.SecretBox(box_key).decrypt(sealed)
        except nacl.exceptions.CryptoError:
            raise KeyFileError("wrong_passphrase", f"{path}: wrong passphrase (or the file was altered)") from None
    else:
        raise KeyFileError("corrupt_key_file", f"{path}: unknown encryption {encryption!r}")
    if len(seed) != 32:
        raise KeyFileError("corrupt_key_file", f"{path}: the seed is not 32 bytes")
    key = NodeKey(seed)
    if doc.get("did") != key.did:
        raise KeyFileError("corrupt_key_file", f"{path}: the DID in the file does not belong to its key")
    return key


def check_permissions(path: Path) -> None:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise KeyFileError("no_key", f"no key file at {path}; create one with `meshnode init`") from None
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError("unsafe_key_file", f"{path} is not a regular file")
    if st.st_mode & 0o077:
        raise KeyFileError(
            "unsafe_key_file",
            f"{path} is readable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"fix it with: chmod 600 {path}",
        )


def _read_doc(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_KEY_FILE_BYTES + 1)
    except FileNotFoundError:
        raise KeyFileError("no_key", f"no key file at {path}; create one with `meshnode init`") from None
    except OSError as exc:
        raise KeyFileError("unreadable_key_file", f"{path}: {exc.strerror}") from None
    if len(raw) > MAX_KEY_FILE_BYTES:
        raise KeyFileError("corrupt_key_file", f"{path} is larger than a key file can be")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise KeyFileError("corrupt_key_file", f"{path} is not a meshnode key file (not JSON)") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("algorithm") != "ed25519":
        raise KeyFileError("corrupt_key_file", f"{path} is not a {FORMAT} ed25519 key file")
    return doc


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, path: Path, field: str) -> bytes:
    try:
        if not isinstance(text, str):
            raise ValueError
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise KeyFileError("corrupt_key_file", f"{path}: {field} is not base64") from None


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
