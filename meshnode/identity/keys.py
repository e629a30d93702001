"""The node's signing key, and the names it has (DID, peer id)."""

from __future__ import annotations

from nacl.signing import SigningKey

from meshnode.identity.did import did_from_public_key, peer_id_from_public_key


class NodeKey:
    """An Ed25519 key pair. The seed never leaves this object except to the key file."""

    __slots__ = ("_signing_key", "public_key", "did", "peer_id")

    def __init__(self, seed: bytes):
        if len(seed) != 32:
            raise ValueError("an Ed25519 seed is 32 bytes")
        self._signing_key = SigningKey(seed)
        self.public_key = bytes(self._signing_key.verify_key)
        self.did = did_from_public_key(self.public_key)
        self.peer_id = peer_id_from_public_key(self.public_key)

    @classmethod
    def generate(cls) -> "NodeKey":
        return cls(bytes(SigningKey.generate()))

    def seed(self) -> bytes:
        return bytes(self._signing_key)

    def sign(self, message: bytes) -> bytes:
        """Detached 64-byte Ed25519 signature."""
        return self._signing_key.sign(message).signature

    def __repr__(self) -> str:
        return f"<NodeKey {self.did}>"
