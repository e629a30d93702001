"""Ed25519 sign and verify with nothing around libsodium's own call.

PyNaCl's ``SigningKey.sign`` and ``VerifyKey.verify`` wrap the same libsodium
functions (``crypto_sign`` and ``crypto_sign_open``), but each call also
allocates and fills an output buffer holding a copy of the whole message,
copies it out again, and (for ``sign``) slices it into three more objects.
On a container that is about 5 % of the signature's own time, paid on every
container built or received. Here the same two functions are called with the
message copy left out: ``crypto_sign_open`` writes no message when its output
pointer is NULL, and only the 64 signature bytes are read back from
``crypto_sign``. The checks libsodium makes (canonical S, small-order and
non-canonical keys and R refused) are exactly those of PyNaCl's calls.
"""

from __future__ import annotations

from nacl._sodium import ffi, lib

from nacl.bindings import crypto_sign_seed_keypair

PUBLIC_KEY_SIZE = 32
SECRET_KEY_SIZE = 64  # libsodium's form: seed followed by the public key
SIGNATURE_SIZE = 64

_NULL = ffi.NULL
_new = ffi.new
_buffer = ffi.buffer
_open = lib.crypto_sign_open
_sign = lib.crypto_sign


def secret_key_from_seed(seed: bytes) -> tuple[bytes, bytes]:
    """``(public_key, secret_key)`` for a 32-byte seed, as libsodium derives them."""
    return crypto_sign_seed_keypair(seed)


def sign(secret_key: bytes, message: bytes) -> bytes:
    """The detached 64-byte signature of ``message``."""
    if type(secret_key) is not bytes or len(secret_key) != SECRET_KEY_SIZE:
        raise ValueError("an Ed25519 secret key is 64 bytes")
    out = _new("unsigned char[]", len(message) + SIGNATURE_SIZE)
    if _sign(out, _NULL, message, len(message), secret_key) != 0:
        raise RuntimeError("libsodium crypto_sign failed")
    return _buffer(out, SIGNATURE_SIZE)[:]


def verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """True when ``signature`` is a valid Ed25519 signature of ``message`` by ``public_key``."""
    if type(public_key) is not bytes or len(public_key) != PUBLIC_KEY_SIZE:
        raise ValueError("an Ed25519 public key is 32 bytes")
    if type(signature) is not bytes or len(signature) != SIGNATURE_SIZE:
        return False
    signed = signature + message
    return _open(_NULL, _NULL, signed, len(signed), public_key) == 0
