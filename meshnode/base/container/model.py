"""The container as meshnode holds it after verification, and its limits.

Wire layout (deterministic CBOR, see protocols/container.md)::

    { "hmp_container": { "head": {...}, "meta": {...}?, "payload": any,
                         "related": {...}? },                      <- signed
      "referenced-by": {...}?, "evaluations": {...}?,
      "relay_chain": [...]? }                                      <- unsigned side blocks

The *signed bytes* are the deterministic encoding of ``hmp_container`` with
``head.signature`` and ``head.container_did`` left out: those two fields are
computed from the signed bytes, so they cannot be inside them. The signature
is Ed25519 over the signed bytes; the container DID is
``did:hmp:container:u`` + base64url (RFC 4648 section 5, no padding) of the
multihash sha2-256 of the signed bytes (multibase prefix ``u``; the same
"EiA..." form other DID methods use for hashes). Base64url rather than
base58 or base32: as short as base58, valid in DIDs, URLs and file names, and
the standard library encodes it in C, which matters at one DID per received
container (base58 and base32 both cost about 4 us here, in Python).
"""

from __future__ import annotations

import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

from meshnode.base.container import cbor

CONTAINER_VERSION = "1.2"
SIG_ALGO = "ed25519"
CONTAINER_DID_PREFIX = "did:hmp:container:u"
SIDE_BLOCKS = ("referenced-by", "evaluations", "relay_chain")
DERIVED_HEAD_FIELDS = ("container_did", "signature")
_SHA256_MULTIHASH = b"\x12\x20"


@dataclass(frozen=True)
class Limits:
    """Edge limits for decoding; all configurable per node (config.toml [limits])."""

    max_bytes: int = 256 * 1024
    max_depth: int = 32
    max_items: int = 16384
    clock_skew_ms: int = 5 * 60 * 1000


DEFAULT_LIMITS = Limits()


_URLSAFE = bytes.maketrans(b"+/", b"-_")  # base64 -> base64url (RFC 4648 section 5)


def container_did_for(signed_bytes: bytes) -> str:
    multihash = _SHA256_MULTIHASH + hashlib.sha256(signed_bytes).digest()
    text = binascii.b2a_base64(multihash, newline=False).translate(_URLSAFE)
    return CONTAINER_DID_PREFIX + text[:-2].decode("ascii")  # 34 bytes: 46 characters and "==" of padding


def payload_hash_for(payload_bytes: bytes) -> str:
    return "sha256:" + hashlib.sha256(payload_bytes).hexdigest()


class Container:
    """A verified container. Immutable by convention: never edit one, publish a new version.

    ``expired`` is True when ``head.ttl`` has passed at verification time: such a
    container is kept (and may be archived) but must not take part in consensus
    or workflows. ``known_class`` is False for classes meshnode has no schema
    for; those are still stored and forwarded.
    """

    __slots__ = ("did", "hmp", "side", "timestamp_ms", "expired", "known_class", "_core_bytes", "_has_float")

    def __init__(self, did: str, hmp: dict, side: dict, timestamp_ms: int, expired: bool,
                 known_class: bool, has_float: bool, core_bytes: bytes | None = None):
        self.did = did
        self.hmp = hmp
        self.side = side
        self.timestamp_ms = timestamp_ms
        self.expired = expired
        self.known_class = known_class
        self._has_float = has_float
        self._core_bytes = core_bytes

    @property
    def head(self) -> dict:
        return self.hmp["head"]

    @property
    def meta(self) -> dict:
        return self.hmp.get("meta", {})

    @property
    def payload(self) -> Any:
        return self.hmp["payload"]

    @property
    def related(self) -> dict:
        return self.hmp.get("related", {})

    @property
    def cls(self) -> str:
        return self.hmp["head"]["class"]

    @property
    def sender_did(self) -> str:
        return self.hmp["head"]["sender_did"]

    @property
    def signature(self) -> bytes:
        return self.hmp["head"]["signature"]

    def core_bytes(self) -> bytes:
        """The envelope with no side blocks: immutable, what the store keeps and re-verifies."""
        if self._core_bytes is None:
            self._core_bytes = cbor._dump({"hmp_container": self.hmp}, self._has_float)
        return self._core_bytes

    def to_bytes(self, with_side: bool = True) -> bytes:
        """The wire form, with the side blocks held now (they are unsigned and may grow)."""
        if not with_side or not self.side:
            return self.core_bytes()
        return cbor.encode({"hmp_container": self.hmp, **self.side})

    def to_plain(self) -> dict:
        """A JSON-friendly view for people (bytes as hex), used by `container show`.

        What verification established and what the sender signed are kept apart
        from the unsigned side blocks, so nothing a relay adds can pose as either.
        """
        view = {"verified": {"container_did": self.did, "expired": self.expired, "known_class": self.known_class},
                "hmp_container": self.hmp}
        if self.side:
            view["unsigned_side_blocks"] = self.side
        return _plain(view)

    def __repr__(self) -> str:
        return f"<Container {self.cls} {self.did} from {self.sender_did}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Container) and other.did == self.did and other.side == self.side

    def __hash__(self) -> int:
        return hash(self.did)


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, bytes):
        return "hex:" + v.hex()
    return v
