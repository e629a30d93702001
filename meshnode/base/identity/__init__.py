"""Identity: the node's Ed25519 key, its did:key, its libp2p peer id, and the key file.

Owns: key generation, DID <-> peer id conversion, the key file on disk.
Must never: write a private key anywhere but the key file, or log it.
"""

from meshnode.base.lazy import exports

__getattr__ = exports(__name__, {
    "did_from_public_key": "meshnode.base.identity.did",
    "did_to_peer_id": "meshnode.base.identity.did",
    "peer_id_from_public_key": "meshnode.base.identity.did",
    "peer_id_to_did": "meshnode.base.identity.did",
    "public_key_from_did": "meshnode.base.identity.did",
    "public_key_from_peer_id": "meshnode.base.identity.did",
    "load_key_file": "meshnode.base.identity.keyfile",
    "write_key_file": "meshnode.base.identity.keyfile",
    "NodeKey": "meshnode.base.identity.keys",
})

__all__ = [
    "NodeKey",
    "did_from_public_key",
    "did_to_peer_id",
    "load_key_file",
    "peer_id_from_public_key",
    "peer_id_to_did",
    "public_key_from_did",
    "public_key_from_peer_id",
    "write_key_file",
]
