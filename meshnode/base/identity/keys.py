"""The node's signing key, and the names it has (DID, peer id)."""

from __future__ import annotations

import os

from meshnode.base.identity import ed25519
from meshnode.base.identity.did import did_from_public_key, peer_id_from_public_key


class NodeKey:
    """An Ed25519 key pair. The seed never leaves this object except to the key file."""

    __slots__ = ("_secret_key", "public_key", "did", "peer_id")

    def __init__(self, seed: bytes):
        if len(seed) != 32:
            raise ValueError("an Ed25519 seed is 32 bytes")
        self.public_key, self._secret_key = ed25519.secret_key_from_seed(bytes(seed))
        self.did = did_from_public_key(self.public_key)
        self.peer_id = peer_id_from_public_key(self.public_key)

    @classmethod
    def generate(cls) -> "NodeKey":
        return cls(os.urandom(32))  # as PyNaCl's SigningKey.generate: 32 random bytes are the seed

    def seed(self) -> bytes:
        return self._secret_key[:32]  # libsodium's secret key is the seed, then the public key

    def sign(self, message: bytes) -> bytes:
        """Detached 64-byte Ed25519 signature."""
        return ed25519.sign(self._secret_key, message)

    def __repr__(self) -> str:
        return f"<NodeKey {self.did}>"
