"""peer_announce containers and their DHT records (HMP NDP over Kad-DHT).

A node publishes a signed ``peer_announce`` (name, interests, expertise,
roles, addresses) as the value of a DHT record in meshnode's namespace. The
record key is short on purpose: py-libp2p refuses FIND_NODE keys longer than
50 bytes that are not multihashes, and a DID-based key would be 62 bytes. The
namespace validator (``validate_record``/``select_record``) is the contract
every node applies: a valid signature, the key bound to the sender's DID,
the newest timestamp wins, and a revocation (``key_is_falsified``) wins over
everything. Pure: no I/O, time passed in.
"""

from __future__ import annotations

import hashlib
import random
from typing import Callable, Sequence

import multiaddr

from meshnode.base.container import Container, ContainerError, Limits, build_container, decode_container
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey

NAMESPACE = "mn"
INTEREST_NAMESPACE = "mn-i"
ROLES = ("relay", "mailman", "pubsub-hub", "archive", "egp-voter")
# an announce is small; a record far larger than this is refused before decoding
MAX_RECORD_BYTES = 16 * 1024
RECORD_LIMITS = Limits(max_bytes=MAX_RECORD_BYTES, max_depth=8)
MAX_ADDR_TEXT = 1024  # characters of one multiaddr in an announce


def record_key(did: str) -> str:
    """The DHT key of a DID's announce: ``/mn/`` + 32 hex digits of sha256(DID) (36 bytes)."""
    return f"/{NAMESPACE}/" + hashlib.sha256(did.encode("utf-8")).hexdigest()[:32]


def interest_key(tag: str) -> str:
    """The provider key of an interest tag (case-insensitive)."""
    return f"/{INTEREST_NAMESPACE}/" + hashlib.sha256(tag.strip().lower().encode("utf-8")).hexdigest()[:32]


def make_announce(key: NodeKey, *, name: str, addresses: Sequence[str], now_ms: int,
                  interests: Sequence[str] = (), expertise: Sequence[str] = (),
                  roles: Sequence[str] = (), revoke: bool = False) -> Container:
    payload: dict = {
        "name": name,
        "addresses": [] if revoke else [{"addr": a} for a in addresses],
        "interests": sorted({t.strip().lower() for t in interests if t.strip()}),
        "expertise": sorted({t.strip().lower() for t in expertise if t.strip()}),
        "roles": sorted(set(roles)),
    }
    if revoke:
        payload["key_is_falsified"] = True
    return build_container(key, "peer_announce", payload, timestamp_ms=now_ms, limits=RECORD_LIMITS)


class RecordError(Exception):
    """A DHT record meshnode refuses; ``code`` says why."""

    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


def validate_record(key: str, value: bytes, now_ms: int) -> Container:
    """The verified announce in ``value`` for DHT ``key``; RecordError otherwise."""
    if len(value) > MAX_RECORD_BYTES:
        raise RecordError("too_large", f"record of {len(value)} bytes")
    try:
        c = decode_container(value, now_ms=now_ms, limits=RECORD_LIMITS)
    except ContainerError as exc:
        raise RecordError(exc.code, exc.reason) from None
    if c.cls != "peer_announce" or not c.known_class:
        raise RecordError("wrong_class", f"a {NAMESPACE} record holds a peer_announce, not {c.cls}")
    if c.head["payload_type"] != "cbor":  # an encrypted or binary announce would skip its schema
        raise RecordError("wrong_class", "an announce's payload is a CBOR map (payload_type cbor)")
    if record_key(c.sender_did) != key:
        raise RecordError("wrong_key", "the record key is not the one for the announce's sender")
    if c.side:
        raise RecordError("side_blocks", "announce records carry no side blocks")
    return c


def select_record(values: Sequence[Container]) -> int:
    """Index of the announce to keep: a revocation first, else the newest timestamp
    (ties broken by container DID, so every node picks the same one)."""
    def rank(i: int) -> tuple:
        c = values[i]
        return (bool(c.payload.get("key_is_falsified")), c.timestamp_ms, c.did)

    return max(range(len(values)), key=rank)


def announce_addresses(c: Container) -> list[str]:
    """The addresses of an announce a node may dial (protocols/mesh.md section 2): each entry's
    ``addr``, when it is multiaddr text whose final ``/p2p/`` component, if any, names the
    sender. Other entries (and other keys of an entry) are skipped; a revocation has none."""
    if c.payload.get("key_is_falsified"):
        return []
    peer_id = did_to_peer_id(c.sender_did)
    return [e["addr"] for e in c.payload.get("addresses", []) if type(e) is dict and _dialable(e.get("addr"), peer_id)]


def _dialable(addr: object, peer_id: str) -> bool:
    if type(addr) is not str or not 0 < len(addr) <= MAX_ADDR_TEXT:
        return False
    try:
        parsed = multiaddr.Multiaddr(addr)
        names = [p.name for p in parsed.protocols()]
    except Exception:  # py-multiaddr raises several types for text it cannot parse
        return False
    if not names:
        return False
    return names[-1] != "p2p" or str(parsed).rsplit("/", 1)[1] == peer_id


REPUBLISH_MS = 10 * 60 * 1000  # py-libp2p refreshes its own routing table every 600 s too
# a routing table that changed makes the DHT work due again at most this long after it was last done:
# while a mesh forms the table changes every round (1, 2, 4, 8 s), and each round's put walk and
# refresh walks (~160 DHT requests per node) loaded 20 processes on 2 cores so much that finds
# asked meanwhile waited 1-4 s for one GET_VALUE (find-tail). Content changes are due at once;
# the announce reaches new peers by the direct push meanwhile (mesh_lookup).
TABLE_CHANGE_GAP_MS = 30 * 1000
JITTER = 0.1  # +- this share of a period, so that nodes started together do not act together


class MaintenanceCadence:
    """When a maintenance round does the DHT work (a routing-table refresh, the announce put to
    the closest peers and the interest tags provided): an idle mesh did it every round (30 s),
    O(peers) streams per node per round for nothing new (issue 18). It is due when it was never
    done, when the announce's content changed since it was last done (new addresses or tags), when
    the routing table changed (the mesh forming, a peer gone: O(changes)) and ``table_gap_ms`` have
    passed since, and otherwise once per ``republish_ms`` give or take ``JITTER``. Pure: time
    passed in."""

    def __init__(self, republish_ms: int = REPUBLISH_MS, rng: Callable[[], float] = random.random,
                 table_gap_ms: int = TABLE_CHANGE_GAP_MS):
        self.republish_ms = republish_ms
        self.rng = rng
        self.table_gap_ms = min(table_gap_ms, republish_ms)
        self._done: tuple[frozenset, tuple] | None = None
        self._done_ms = 0
        self._next_ms = 0

    def due(self, now_ms: int, table: frozenset, content: tuple) -> bool:
        if self._done is None or self._done[1] != content or now_ms >= self._next_ms:
            return True
        return self._done[0] != table and now_ms >= self._done_ms + self.table_gap_ms

    def done(self, now_ms: int, table: frozenset, content: tuple) -> None:
        self._done = (table, content)
        self._done_ms = now_ms
        self._next_ms = now_ms + int(jittered(self.republish_ms, self.rng))


def jittered(period: float, rng: Callable[[], float] = random.random) -> float:
    """``period`` moved by up to +- JITTER of itself."""
    return period * (1 - JITTER + 2 * JITTER * rng())
