"""Per-peer liveness from heartbeats: ok, quiet, stale, dead.

Sans-IO: the node reports what it heard (``heard``) and asks what changed
(``tick``) with the time passed in; nothing here sleeps or reads a clock.
A peer is *ok* while heartbeats arrive on time, *quiet* after missing a
couple, *stale* after missing several (the reactor may start to worry), and
*dead* after a long silence. Thresholds are measured from the last heartbeat.

A heartbeat is fresh when its (signed timestamp, seq) is later than the last
one taken from that sender: a replayed heartbeat is not, and a restarted
sender, whose ``seq`` starts again at 1, is at once (its timestamp is newer).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Liveness(str, enum.Enum):
    OK = "ok"
    QUIET = "quiet"
    STALE = "stale"
    DEAD = "dead"


@dataclass(frozen=True)
class Thresholds:
    """Silence (ms since the last heartbeat) after which a peer enters each state."""

    quiet_ms: int = 25_000
    stale_ms: int = 60_000
    dead_ms: int = 300_000

    def __post_init__(self) -> None:
        if not 0 < self.quiet_ms < self.stale_ms < self.dead_ms:
            raise ValueError("liveness thresholds must grow: 0 < quiet < stale < dead")

    @classmethod
    def for_interval(cls, heartbeat_ms: int) -> "Thresholds":
        """Defaults scaled to the heartbeat interval: quiet after 2.5, stale after 6, dead after 30."""
        return cls(int(heartbeat_ms * 2.5), heartbeat_ms * 6, heartbeat_ms * 30)

    def classify(self, silence_ms: int) -> Liveness:
        if silence_ms >= self.dead_ms:
            return Liveness.DEAD
        if silence_ms >= self.stale_ms:
            return Liveness.STALE
        if silence_ms >= self.quiet_ms:
            return Liveness.QUIET
        return Liveness.OK


@dataclass(frozen=True)
class Change:
    peer: str
    old: Liveness | None  # None: first heard
    new: Liveness
    at_ms: int


@dataclass
class _Peer:
    last_heard_ms: int
    last_key: tuple[int, int]  # (sent_ms, seq) of the last heartbeat taken
    state: Liveness


@dataclass
class LivenessTracker:
    thresholds: Thresholds = field(default_factory=Thresholds)
    _peers: dict[str, _Peer] = field(default_factory=dict)

    def heard(self, peer: str, now_ms: int, seq: int | None = None, sent_ms: int | None = None) -> Change | None:
        """A heartbeat (``seq``, signed at ``sent_ms``) or any other sign of life from ``peer``.
        A heartbeat not later than the last one taken, by (sent_ms, seq), is ignored (returns
        None and changes nothing): a replay cannot make a dead peer look alive. A restarted
        sender counts again from seq 1 with a newer timestamp, and is taken at once."""
        key = (sent_ms if sent_ms is not None else 0, seq) if seq is not None else None
        p = self._peers.get(peer)
        if p is None:
            self._peers[peer] = _Peer(now_ms, key or (-1, -1), Liveness.OK)
            return Change(peer, None, Liveness.OK, now_ms)
        if key is not None:
            if key <= p.last_key:
                return None
            p.last_key = key
        p.last_heard_ms = max(p.last_heard_ms, now_ms)
        if p.state is not Liveness.OK:
            old, p.state = p.state, Liveness.OK
            return Change(peer, old, Liveness.OK, now_ms)
        return None

    def freshness(self, peer: str, seq: int, sent_ms: int) -> str:
        """Whether a heartbeat would be taken (see ``heard``): "new", "duplicate" (the last one
        again: gossip may deliver a message twice when two copies race), or "older"."""
        p = self._peers.get(peer)
        if p is None or (sent_ms, seq) > p.last_key:
            return "new"
        return "duplicate" if (sent_ms, seq) == p.last_key else "older"

    def tick(self, now_ms: int) -> list[Change]:
        """Re-classify every peer at ``now_ms``; returns the changes."""
        changes = []
        for peer, p in self._peers.items():
            new = self.thresholds.classify(now_ms - p.last_heard_ms)
            if new is not p.state:
                changes.append(Change(peer, p.state, new, now_ms))
                p.state = new
        return changes

    def state(self, peer: str) -> Liveness | None:
        p = self._peers.get(peer)
        return p.state if p else None

    def last_heard_ms(self, peer: str) -> int | None:
        p = self._peers.get(peer)
        return p.last_heard_ms if p else None

    def forget(self, peer: str) -> None:
        """Drop what is known of ``peer`` (a dead stranger): heard again, it starts afresh."""
        self._peers.pop(peer, None)

    def peers(self) -> dict[str, Liveness]:
        return {peer: p.state for peer, p in self._peers.items()}
