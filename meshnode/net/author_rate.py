"""How fast gossip from unknown authors is relayed: token buckets, one per author and one for all.

A gossiped container whose author the node does not know (``store.known``)
is relayed and stored only while both its author's bucket and the shared
bucket of all unknown authors hold a token; otherwise it is ignored (not
relayed, not stored, not held against the peer that forwarded it). Known
authors are never limited here.

Pure: time is passed in. Memory stays bounded however many identities
appear: an author gets a bucket only when a token was taken (so the shared
bucket bounds how many are created per second), and a bucket that has
filled up again is the same as none and is dropped.

Copies of one container arrive from several forwarders at once (gossip
floods it); passing ``copy_of`` (the container's content-addressed id) lets a
copy of one already let through pass without spending a second token.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

COPIES_KEPT = 1024  # ids of containers let through lately: copies of one arrive within seconds


@dataclass(frozen=True)
class RateSettings:
    per_author_per_second: float = 0.2
    per_author_burst: int = 32
    total_per_second: float = 10.0
    total_burst: int = 50
    # StrangerWrites: every unknown author's container no known peer sent, all paths together
    stranger_writes_per_second: float = 1.0
    stranger_writes_burst: int = 10  # 10 + 1/s: 84 in a 25 s attack, 70 in a minute (issue 36: at most 100)


class _Bucket:
    __slots__ = ("tokens", "at_ms")

    def __init__(self, tokens: float, at_ms: int):
        self.tokens = tokens
        self.at_ms = at_ms

    def refill(self, now_ms: int, rate: float, burst: int) -> float:
        self.tokens = min(float(burst), self.tokens + max(0, now_ms - self.at_ms) * rate / 1000)
        self.at_ms = now_ms
        return self.tokens


class AuthorRate:
    def __init__(self, settings: RateSettings = RateSettings(), sweep_above: int = 1024,
                 shared: "StrangerWrites | None" = None):
        """``shared``: the write rate of all strangers, which a container let through spends too."""
        self.settings = settings
        self.shared = shared
        self._total = _Bucket(float(settings.total_burst), 0)
        self._authors: dict[str, _Bucket] = {}
        self._sweep_above = sweep_above
        self._passed: OrderedDict[str, None] = OrderedDict()  # container ids let through lately

    def allow(self, author: str, now_ms: int, copy_of: str | None = None) -> tuple[bool, str]:
        """(True, "") when a container of ``author`` may pass now, else (False, reason):
        ``author_rate`` (this author is over its rate), ``total_rate`` (all unknown authors' gossip
        is) or ``stranger_rate`` (the shared write rate of strangers is). A container ``copy_of``
        one let through lately passes free."""
        if copy_of is not None and copy_of in self._passed:
            return True, ""
        ok, why = self._spend(author, now_ms)
        if ok and copy_of is not None:
            self._passed[copy_of] = None
            while len(self._passed) > COPIES_KEPT:
                self._passed.popitem(last=False)
        return ok, why

    def _spend(self, author: str, now_ms: int) -> tuple[bool, str]:
        s = self.settings
        bucket = self._authors.get(author)
        if bucket is not None and bucket.refill(now_ms, s.per_author_per_second, s.per_author_burst) < 1:
            return False, "author_rate"
        if self._total.refill(now_ms, s.total_per_second, s.total_burst) < 1:
            return False, "total_rate"
        if self.shared is not None and not self.shared.take(now_ms):
            return False, "stranger_rate"
        self._total.tokens -= 1
        if bucket is None:
            if len(self._authors) >= self._sweep_above:
                self.sweep(now_ms)
            bucket = self._authors[author] = _Bucket(float(s.per_author_burst), now_ms)
        bucket.tokens -= 1
        return True, ""

    def sweep(self, now_ms: int) -> None:
        """Drop the buckets that are full again (they hold nothing a new bucket would not)."""
        s = self.settings
        self._authors = {a: b for a, b in self._authors.items()
                         if b.refill(now_ms, s.per_author_per_second, s.per_author_burst) < s.per_author_burst}

    def tracked(self) -> int:
        return len(self._authors)


STRANGER_WRITES_PER_SECOND = RateSettings.stranger_writes_per_second
STRANGER_WRITES_BURST = RateSettings.stranger_writes_burst


class StrangerWrites:
    """How fast containers of unknown authors that no known peer sent are stored, all strangers
    together and every path (push, sync, fetch, gossip): one bucket. A Sybil swarm of any size
    stores at most ``burst`` plus ``per_second`` a second (defaults: 10 + 60 a minute, within the
    100 a minute issue 36 allows, also over an attack of 25 s: 10 + 25); storing is the costliest
    step of an arrival (the insert, its triggers and views, about 1-1.5 ms here). Past the rate a push or sync container is refused for
    now (``busy``) and comes again with the next session, a gossiped one is ignored. Known authors,
    and containers a known peer sends, are never limited here."""

    def __init__(self, per_second: float = STRANGER_WRITES_PER_SECOND, burst: int = STRANGER_WRITES_BURST):
        self.per_second = per_second
        self.burst = burst
        self._bucket = _Bucket(float(burst), 0)

    def take(self, now_ms: int) -> bool:
        if self._bucket.refill(now_ms, self.per_second, self.burst) < 1:
            return False
        self._bucket.tokens -= 1
        return True

    def room(self, now_ms: int) -> int:
        """How many containers may be stored now (whole tokens; nothing is taken)."""
        return int(self._bucket.refill(now_ms, self.per_second, self.burst))

    def wait_ms(self, now_ms: int) -> int:
        """Milliseconds until one container may be stored (0: now)."""
        missing = 1 - self._bucket.refill(now_ms, self.per_second, self.burst)
        return 0 if missing <= 0 else int(missing * 1000 / self.per_second) + 1
