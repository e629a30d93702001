"""The typed rejection of a container, and its code list.

Every way a container (or a CBOR item meant to be one) can be refused maps to
one ``code`` below; the list is part of the protocol (protocols/container.md)
and the invalid test vectors name these codes. The decoder and verifier raise
nothing but :class:`ContainerError` on any input.
"""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError

# code -> one-line meaning; the protocol document mirrors this table.
CODES = {
    "too_large": "the encoded item is larger than the configured maximum",
    "malformed_cbor": "the bytes are not one well-formed CBOR item",
    "non_deterministic": "well-formed CBOR, but not the deterministic encoding (RFC 8949 4.2.1)",
    "duplicate_key": "a map holds the same key twice",
    "too_deep": "arrays and maps are nested deeper than the configured maximum",
    "too_many_items": "the item holds more data items (arrays, maps, keys, values) than the configured maximum",
    "forbidden_type": "a CBOR type meshnode does not allow (tags, undefined, simple values, non-text map keys)",
    "bad_structure": "a required block or field is missing, or a field has the wrong type",
    "bad_field": "a field has the right type but an invalid value",
    "unsupported_version": "head.version is not a container version meshnode speaks",
    "unsupported_algorithm": "head.sig_algo is not ed25519",
    "future_timestamp": "head.timestamp is later than now plus the allowed clock skew",
    "payload_hash_mismatch": "head.payload_hash is not the sha256 of the payload's deterministic bytes",
    "bad_signature": "the Ed25519 signature does not verify against the sender's key",
    "did_mismatch": "head.container_did is not derived from the signed bytes",
    "bad_sender": "head.sender_did is not an Ed25519 did:key, or head.public_key does not match it",
    "class_schema": "the payload does not satisfy the schema of its (known) class",
}


class ContainerError(MeshnodeError):
    """A refused container: ``code`` is one of :data:`CODES`, ``reason`` says what exactly."""

    def __init__(self, code: str, reason: str):
        assert code in CODES, code
        super().__init__(code, reason)
