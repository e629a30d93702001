"""Range-based set reconciliation (in the style of Negentropy), sans-IO: format 1 (``/meshnode/sync/1.0.0``).

Kept for nodes that predate format 2 (``rbsr``); ``ReconcileError`` serves both.

Theory of operation
-------------------
Each side holds a sorted list of items ``(timestamp_ms, id)`` (``id``: the
32-byte digest inside a container DID) — only the items it may share with this
peer, so nothing private is ever named. The space of items is cut into
contiguous ranges, each described by its upper bound; a message is a list of
ranges covering everything after the previous bound. A range travels as one
of:

* ``skip``        — nothing to do here;
* ``fingerprint`` — (fingerprint, count) of the sender's items in the range;
* ``ids``         — the sender's item ids in the range, in full.

On a fingerprint that differs from its own, a side answers with its ids when
it holds few items in the range, and otherwise splits the range at its own
items into ``split`` buckets and answers with their fingerprints (buckets are
fingerprinted even when small: most of them match, and a match costs one
fingerprint instead of a list). On ids, a side knows both sets for
the range: it records what the peer lacks (``have``) and what it lacks
(``need``), and the range is done. When a side has nothing left to say, the
reconciliation is over. Differences are found in O(log n) rounds and cost
traffic in proportion to them, not to the size of the sets.

The fingerprint of a range is SHA-256 over (the sum of its ids as 256-bit
integers modulo 2^256, then its count), cut to 16 bytes; prefix sums make any
range's fingerprint cost one subtraction.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass, field

SKIP, FINGERPRINT, IDS = 0, 1, 2
MOD = 1 << 256
INF = (1 << 63, b"\xff" * 32)  # above every real item
MAX_RANGES = 1 << 17
MAX_IDS = 1 << 20


class ReconcileError(ValueError):
    """A malformed reconciliation message from the peer."""


Item = tuple[int, bytes]  # (timestamp_ms, 32-byte id)


@dataclass(frozen=True)
class Range:
    upper: Item  # exclusive of the previous range's upper bound, inclusive of this one
    kind: int
    fingerprint: bytes = b""
    count: int = 0
    ids: tuple[bytes, ...] = ()


@dataclass
class Reconciler:
    items: list[Item]
    split: int = 16
    list_threshold: int = 32
    have: set[bytes] = field(default_factory=set)  # ids the peer lacks (we send them)
    need: set[bytes] = field(default_factory=set)  # ids we lack (we ask for them)
    rounds: int = 0

    def __post_init__(self) -> None:
        self.items = sorted(set(self.items))
        self._ids = [i for _, i in self.items]
        self._prefix = [0]
        for _, ident in self.items:
            self._prefix.append((self._prefix[-1] + int.from_bytes(ident, "big")) % MOD)

    # --- the two entry points -------------------------------------------------

    def initiate(self) -> list[Range]:
        """The first message: the whole space as one fingerprint (or ids, for a small set)."""
        return [self._describe(0, len(self.items), INF, list_up_to=self.list_threshold)]  # small sets: list

    def receive(self, message: list[Range]) -> list[Range] | None:
        """Process the peer's message; returns the answer, or None when nothing is left to say."""
        self.rounds += 1
        check_message(message)
        out: list[Range] = []
        lower_index = 0
        for r in message:
            upper_index = bisect.bisect_right(self.items, r.upper)
            a, b = lower_index, upper_index
            if r.kind == FINGERPRINT:
                if (r.fingerprint, r.count) != self._fingerprint(a, b):
                    out.extend(self._split(a, b, r.upper))
                else:
                    out.append(Range(r.upper, SKIP))
            elif r.kind == IDS:
                theirs = set(r.ids)
                mine = set(self._ids[a:b])
                self.have |= mine - theirs
                self.need |= theirs - mine
                out.append(Range(r.upper, SKIP))
            else:
                out.append(Range(r.upper, SKIP))
            lower_index = upper_index
        out = _merge_skips(out)
        if all(r.kind == SKIP for r in out):
            return None
        return out

    def peer_ended(self) -> None:
        """The peer's null: in this format it may come at any point of the pass."""

    # --- helpers ------------------------------------------------------------------

    def _fingerprint(self, a: int, b: int) -> tuple[bytes, int]:
        total = (self._prefix[b] - self._prefix[a]) % MOD
        count = b - a
        return hashlib.sha256(total.to_bytes(32, "big") + count.to_bytes(8, "big")).digest()[:16], count

    def _describe(self, a: int, b: int, upper: Item, list_up_to: int = 2) -> Range:
        """A fingerprint, or the ids themselves when there are so few that they cost no more."""
        if b - a <= list_up_to:
            return Range(upper, IDS, ids=tuple(self._ids[a:b]))
        fp, count = self._fingerprint(a, b)
        return Range(upper, FINGERPRINT, fingerprint=fp, count=count)

    def _split(self, a: int, b: int, upper: Item) -> list[Range]:
        n = b - a
        if n <= self.list_threshold:
            return [Range(upper, IDS, ids=tuple(self._ids[a:b]))]
        out = []
        start = a
        for k in range(1, self.split):
            end = a + n * k // self.split
            if end <= start:
                continue
            out.append(self._describe(start, end, self.items[end - 1]))
            start = end
        out.append(self._describe(start, b, upper))
        return out


def _merge_skips(ranges: list[Range]) -> list[Range]:
    out: list[Range] = []
    for r in ranges:
        if out and r.kind == SKIP and out[-1].kind == SKIP:
            out[-1] = r
        else:
            out.append(r)
    return out


def check_message(message: list[Range]) -> None:
    """Ranges in strictly increasing order, ending at the top of the space, within limits."""
    if not message or len(message) > MAX_RANGES:
        raise ReconcileError(f"a message holds 1 to {MAX_RANGES} ranges")
    if message[-1].upper != INF:
        raise ReconcileError("the last range must reach the top of the space")
    previous = None
    total_ids = 0
    for r in message:
        if previous is not None and not previous < r.upper:
            raise ReconcileError("range bounds must increase")
        previous = r.upper
        if r.kind not in (SKIP, FINGERPRINT, IDS):
            raise ReconcileError(f"unknown range kind {r.kind}")
        if r.kind == FINGERPRINT and (len(r.fingerprint) != 16 or r.count < 0):
            raise ReconcileError("a fingerprint is 16 bytes with a count")
        if r.kind == IDS:
            total_ids += len(r.ids)
            if total_ids > MAX_IDS or any(len(i) != 32 for i in r.ids):
                raise ReconcileError(f"ids are 32 bytes, at most {MAX_IDS} in a message")


def encode(message: list[Range]) -> list:
    """The message as CBOR-ready data: [[ts, id, kind, data], ...]."""
    out = []
    for r in message:
        data = None
        if r.kind == FINGERPRINT:
            data = [r.fingerprint, r.count]
        elif r.kind == IDS:
            data = list(r.ids)
        out.append([r.upper[0], r.upper[1], r.kind, data])
    return out


def decode(data: object) -> list[Range]:
    if type(data) is not list or len(data) > MAX_RANGES:
        raise ReconcileError("a message is a list of ranges")
    out = []
    for entry in data:
        if type(entry) is not list or len(entry) != 4:
            raise ReconcileError("a range is [timestamp, id, kind, data]")
        ts, ident, kind, payload = entry
        if type(ts) is not int or type(ident) is not bytes or len(ident) != 32 or type(kind) is not int:
            raise ReconcileError("a range bound is an integer timestamp and a 32-byte id")
        if kind == FINGERPRINT:
            if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not bytes \
                    or type(payload[1]) is not int:
                raise ReconcileError("fingerprint data is [16 bytes, count]")
            out.append(Range((ts, ident), kind, fingerprint=payload[0], count=payload[1]))
        elif kind == IDS:
            if type(payload) is not list or any(type(i) is not bytes for i in payload):
                raise ReconcileError("ids data is a list of byte strings")
            out.append(Range((ts, ident), kind, ids=tuple(payload)))
        else:
            out.append(Range((ts, ident), kind))
    check_message(out)
    return out
