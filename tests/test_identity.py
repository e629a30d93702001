"""did:key and libp2p peer ids for one Ed25519 key, both directions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl.signing import VerifyKey

from meshnode.base.errors import IdentityError
from meshnode.base.identity import (
    NodeKey,
    did_from_public_key,
    did_to_peer_id,
    peer_id_from_public_key,
    peer_id_to_did,
    public_key_from_did,
    public_key_from_peer_id,
)
from meshnode.base.identity.base58 import b58decode, b58encode

# From the did:key method's published Ed25519 test vectors: seed -> DID, and the
# public key in base58 for the first two.
SPEC_VECTORS = [
    ("00" * 32, "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",
     "4zvwRjXUKGfvwnParsHAS3HuSVzV5cA4McphgmoCtajS"),
    ("00" * 31 + "01", "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG",
     "6ASf5EcmmEHTgDJ4X4ZT5vT6iHVJBXPg5AN5YoTCpGWt"),
    ("00" * 31 + "02", "did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf",
     "8pM1DN3RiT8vbom5u1sNryaNT1nyL8CTTW3b5PwWXRBH"),
    ("00" * 31 + "03", "did:key:z6MkvqoYXQfDDJRv8L4wKzxYeuKyVZBfi9Qo6Ro8MiLH3kDQ",
     "HPYVwAQmskwT1qEEeRzhoomyfyupJGASQQtCXSNG8XS2"),
    ("00" * 31 + "04", "did:key:z6MkwW6aqMnjgrhJXFUko3NnZPGzVpkNzhYK7yEhnsibmLwL",
     "J3qYF7YJMKCqQke47UQwiHizgFUXapHxRxKmxbkar89x"),
]


@pytest.mark.parametrize("seed, did, pub58", SPEC_VECTORS)
def test_did_key_spec_vectors_both_directions(seed, did, pub58):
    key = NodeKey(bytes.fromhex(seed))
    assert key.public_key == b58decode(pub58)
    assert key.did == did
    assert did_from_public_key(key.public_key) == did
    assert public_key_from_did(did) == key.public_key


def _libp2p_peer_id(public_key: bytes) -> str:
    from libp2p.crypto.ed25519 import Ed25519PublicKey
    from libp2p.peer.id import ID

    return ID.from_pubkey(Ed25519PublicKey.from_bytes(public_key)).to_base58()


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=32, max_size=32))
def test_peer_id_matches_libp2p_and_converts_both_ways(seed):
    key = NodeKey(seed)
    peer_id = peer_id_from_public_key(key.public_key)
    assert peer_id == _libp2p_peer_id(key.public_key)  # py-libp2p's own derivation
    assert peer_id.startswith("12D3KooW")
    assert key.peer_id == peer_id
    assert public_key_from_peer_id(peer_id) == key.public_key
    assert did_to_peer_id(key.did) == peer_id
    assert peer_id_to_did(peer_id) == key.did


def test_libp2p_parses_our_peer_id_back_to_the_same_key():
    from libp2p.peer.id import ID

    key = NodeKey(bytes(range(32)))
    parsed = ID.from_base58(key.peer_id)
    assert parsed.extract_public_key().to_bytes() == key.public_key


@pytest.mark.parametrize(
    "did",
    [
        "did:hmp:agent123",
        "did:key:",
        "did:key:z",
        "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooW0",  # '0' is not base58
        "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme",  # secp256k1, not ed25519
        "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWpX",  # one character too many
        "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDoo",  # too short
        "did:key:z1" + "6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp",  # leading zero byte
        "x" * 500,
    ],
)
def test_bad_dids_are_refused_with_identity_error(did):
    with pytest.raises(IdentityError) as info:
        public_key_from_did(did)
    assert info.value.code == "bad_did"


@pytest.mark.parametrize("peer_id", ["", "QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N", "12D3KooW0", "1" * 200])
def test_bad_peer_ids_are_refused(peer_id):
    with pytest.raises(IdentityError) as info:
        public_key_from_peer_id(peer_id)
    assert info.value.code == "bad_peer_id"


@given(st.binary(max_size=80))
def test_base58_round_trip(data):
    assert b58decode(b58encode(data)) == data


def test_base58_known_values():
    assert b58encode(b"") == ""
    assert b58encode(b"\x00\x00\x01") == "112"
    assert b58encode(b"hello world") == "StV1DL6CwTryKyV"
    with pytest.raises(ValueError):
        b58decode("0OIl")


def test_signatures_verify_with_the_key_named_by_the_did():
    key = NodeKey.generate()
    sig = key.sign(b"message")
    VerifyKey(public_key_from_did(key.did)).verify(b"message", sig)
