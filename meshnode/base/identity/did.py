"""DIDs and libp2p peer ids for one Ed25519 key.

A node is named by ``did:key`` (W3C did:key method: multibase base58btc of the
multicodec ``ed25519-pub`` (0xed 0x01) followed by the 32-byte public key).
The same key also names the node on libp2p as a peer id: the identity multihash
of the protobuf ``PublicKey{Type: Ed25519, Data: key}``, printed in base58btc
("12D3KooW..."). Both names carry the whole public key, so either converts to
the other with no lookup, and a DID can always be checked against the key that
signed something.
"""

from __future__ import annotations

import functools

from meshnode.base.errors import IdentityError
from meshnode.base.identity.base58 import b58decode, b58encode

DID_KEY_PREFIX = "did:key:z"
_ED25519_MULTICODEC = b"\xed\x01"
# protobuf PublicKey: field 1 (varint) KeyType.Ed25519 = 1; field 2 (bytes) len 32
_PB_ED25519_HEADER = b"\x08\x01\x12\x20"
# multihash: code 0x00 (identity), length 36
_IDENTITY_MULTIHASH_HEADER = b"\x00\x24"
PUBLIC_KEY_SIZE = 32
MAX_DID_LENGTH = 128  # a did:key for ed25519 is 56 characters; anything far longer is junk


def did_from_public_key(public_key: bytes) -> str:
    _check_key(public_key)
    return DID_KEY_PREFIX + b58encode(_ED25519_MULTICODEC + public_key)


@functools.lru_cache(maxsize=4096)  # senders repeat; base58 decoding is the slow part
def public_key_from_did(did: str) -> bytes:
    """Return the Ed25519 public key named by a ``did:key``; IdentityError otherwise."""
    if not isinstance(did, str) or len(did) > MAX_DID_LENGTH:
        raise IdentityError("bad_did", "a DID must be a string of at most 128 characters")
    if not did.startswith(DID_KEY_PREFIX):
        raise IdentityError("bad_did", f"not an Ed25519 did:key (must start with {DID_KEY_PREFIX!r}): {did[:60]!r}")
    try:
        raw = b58decode(did[len(DID_KEY_PREFIX):])
    except ValueError as exc:
        raise IdentityError("bad_did", f"did:key is not valid base58btc: {exc}") from None
    if not raw.startswith(_ED25519_MULTICODEC) or len(raw) != 2 + PUBLIC_KEY_SIZE:
        raise IdentityError("bad_did", "did:key does not hold a 32-byte ed25519-pub key")
    key = raw[2:]
    if b58encode(raw) != did[len(DID_KEY_PREFIX):]:
        raise IdentityError("bad_did", "did:key is not in its canonical base58 form")
    return key


def peer_id_from_public_key(public_key: bytes) -> str:
    _check_key(public_key)
    return b58encode(_IDENTITY_MULTIHASH_HEADER + _PB_ED25519_HEADER + public_key)


def public_key_from_peer_id(peer_id: str) -> bytes:
    """Return the Ed25519 key inlined in a libp2p peer id ("12D3KooW..." form)."""
    if not isinstance(peer_id, str) or len(peer_id) > MAX_DID_LENGTH:
        raise IdentityError("bad_peer_id", "a peer id must be a string of at most 128 characters")
    try:
        raw = b58decode(peer_id)
    except ValueError as exc:
        raise IdentityError("bad_peer_id", f"peer id is not valid base58btc: {exc}") from None
    header = _IDENTITY_MULTIHASH_HEADER + _PB_ED25519_HEADER
    if not raw.startswith(header) or len(raw) != len(header) + PUBLIC_KEY_SIZE:
        raise IdentityError(
            "bad_peer_id", "peer id is not an inlined Ed25519 key (only Ed25519 peers can map to a did:key)"
        )
    if b58encode(raw) != peer_id:
        raise IdentityError("bad_peer_id", "peer id is not in its canonical base58 form")
    return raw[len(header):]


def did_to_peer_id(did: str) -> str:
    return peer_id_from_public_key(public_key_from_did(did))


@functools.lru_cache(maxsize=4096)
def peer_id_to_did(peer_id: str) -> str:
    """The DID of a peer id. Cached: base58 both ways in Python is ~0.1 ms, and the gate asks it of
    every connected peer at each stranger's accept (a churning swarm: hundreds a second). A peer id
    that is not Ed25519's raises, and is not cached."""
    return did_from_public_key(public_key_from_peer_id(peer_id))


def _check_key(public_key: bytes) -> None:
    if not isinstance(public_key, (bytes, bytearray)) or len(public_key) != PUBLIC_KEY_SIZE:
        raise IdentityError("bad_key", "an Ed25519 public key is exactly 32 bytes")
