"""Strangers as one: what all the peers this node does not know may hold together (sans-IO, time passed in).

Theory of operation
-------------------
Identities are free, and an attacker with many addresses spreads them over
many /24s, so limits per peer, address and subnet do not bound a swarm.
Besides the strangers' shared CPU budget (``budget.CpuBudgets``), this gate
bounds, for all strangers together, whatever their number and addresses:

* **handshakes** of inbound connections from addresses no known peer
  used recently, per second (``handshakes_per_second`` up to
  ``handshakes_burst``), before the handshake is paid for: a new connection
  costs ~14 ms of CPU here (Noise, multistream, yamux, identify) before its
  peer is known, so 12 identities a second from 256 /24s (none over any
  address limit) took a fifth of a core and held the event loop for up to
  0.85 s at a time. Over the rate the connection is closed as it is accepted;
* **new identities** admitted per second (a token bucket of
  ``new_per_second`` up to ``new_burst``), at connection time: an identity
  never seen here and not remembered is refused over the rate. Identities
  admitted before are remembered (a bounded LRU of ``remembered``, seeded at
  start with the peers the store knows), and so is every peer with standing
  (it sent valid input): they reconnect without paying again;
* **inbound connections** at once (``max_connections``, below
  ``[net] max_connections`` so that known peers always find room). When
  full, a newcomer takes the place of the stranger that costs most if that
  one costs more than the newcomer (``cost_of``: the share of its budgets it
  spent recently), else of the one idle longest if idle for
  ``idle_evict_ms``; otherwise the newcomer is refused. Evicting rather than
  always refusing: a swarm that holds every slot idle or busy at our
  expense would otherwise lock every honest newcomer out; refusing when no
  one qualifies, so that churning identities cannot push out strangers who
  work and cost little. Churn is bounded by the new-identity rate;
* **inbound exchange and sync streams** at once (``max_streams``;
  ``AddressGuard`` bounds them per address);
* **inbound streams opened**, before multistream negotiates their protocol:
  a stream refused later by its handler (busy, over budget) has already cost
  a yamux frame, two Noise-sealed multistream messages each way and a task;
  43 slowloris identities opened ~100 a second, a third of a core. Each
  stranger's inbound connection opens at most ``stream_opens_per_second`` (up
  to ``stream_opens_burst``), and all strangers together
  ``all_stream_opens_per_second`` (up to ``all_stream_opens_burst``), except
  for the first ``free_stream_opens`` of each connection (identify, pubsub,
  heartbeats, a first request: a newcomer is heard during a flood; a swarm's
  identities pay the new-identity rate for theirs). Over the rate the stream
  is reset as it opens.

Known peers (own key, friends, trusted, committee) are never counted here
(the caller does not ask), nor are our own dials. Connections are keyed by
whatever the caller passes (the libp2p connection object).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable

from meshnode.net.budget import BoundedLRU


@dataclass(frozen=True)
class StrangerLimits:
    max_connections: int = 64  # [peers] strangers_connections: a swarm's memory (~170 KB a connection measured)
    #                            and libp2p upkeep per peer stay small; at most half of [net] max_connections
    max_streams: int = 64  # [peers] strangers_streams: two addresses' worth of address_streams (32)
    new_per_second: float = 2.0  # [peers] new_peers_per_second: a few newcomers a second, far above honest churn
    new_burst: int = 30  # [peers] new_peers_burst: a mesh of a few dozen nodes starting at once
    idle_evict_ms: int = 30_000  # [peers] strangers_idle_seconds: three heartbeats without input
    remembered: int = 4096  # [peers] max_records: identities admitted before, that reconnect freely
    handshakes_per_second: float = 4.0  # [peers] stranger_handshakes_per_second: ~0.06 of a core at ~14 ms each
    handshakes_burst: int = 16  # [peers] stranger_handshakes_burst: a few peers dialling back after our restart
    stream_opens_per_second: float = 4.0  # [peers] stranger_stream_opens_per_second: per connection; an honest
    #                                        peer opens a stream or two per heartbeat besides its long-lived ones
    stream_opens_burst: int = 32  # [peers] stranger_stream_opens_burst: a first sync's fetches, identify, pubsub
    all_stream_opens_per_second: float = 16.0  # [peers] strangers_stream_opens_per_second: all strangers together
    all_stream_opens_burst: int = 64  # [peers] strangers_stream_opens_burst: a few newcomers' first streams at once
    free_stream_opens: int = 6  # a connection's first streams pass the shared rate: identify, pubsub, heartbeat, ...


@dataclass
class Slot:
    did: str
    since_ms: int
    active_ms: int  # its last input charged (``touch``), or when it connected
    opens: "Rate | None" = None  # the streams it may open (``admit_stream_open``)
    opened: int = 0  # streams it opened (admitted or not)


class Rate:
    """A token bucket of ``per_second`` up to ``burst``, full at the first ``take``."""

    def __init__(self, per_second: float, burst: int):
        self.per_second, self.burst = per_second, burst
        self._tokens = float(burst)
        self._refilled_ms: int | None = None

    def take(self, now_ms: int) -> bool:
        if self._refilled_ms is not None:
            elapsed = max(0, now_ms - self._refilled_ms)
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.per_second / 1000)
        self._refilled_ms = now_ms
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class StrangerGate:
    def __init__(self, limits: StrangerLimits = StrangerLimits()):
        self.limits = limits
        self._slots: dict[Hashable, Slot] = {}  # inbound connection -> the stranger holding it
        self._remembered: BoundedLRU[bool] = BoundedLRU(limits.remembered)
        self._new = Rate(limits.new_per_second, limits.new_burst)
        self._handshakes = Rate(limits.handshakes_per_second, limits.handshakes_burst)
        self._stream_opens = Rate(limits.all_stream_opens_per_second, limits.all_stream_opens_burst)
        self._streams: dict[str, int] = {}
        self.streams = 0

    def admit_handshake(self, now_ms: int) -> bool:
        """Whether an inbound connection from an address no known peer used recently may start its
        handshake now."""
        return self._handshakes.take(now_ms)

    # --- new identities -------------------------------------------------------------

    def remember(self, did: str) -> None:
        """``did`` is no newcomer (the store knows it, or it was admitted before)."""
        self._remembered.put(did, True)

    def admit_identity(self, did: str, now_ms: int, standing: bool = False) -> bool:
        """Whether ``did`` may connect now: remembered, with ``standing``, or a newcomer within the rate
        (then remembered from now on)."""
        if standing or self._remembered.get(did) is not None:
            return True
        if not self._new.take(now_ms):
            return False
        self._remembered.put(did, True)
        return True

    # --- connections ----------------------------------------------------------------

    def connect(self, conn: Hashable, did: str, now_ms: int,
                cost_of: Callable[[str], float] = lambda did: 0.0) -> tuple[bool, Hashable | None]:
        """Whether ``did``'s new inbound connection ``conn`` may stay, and the connection it takes the
        place of (to close; already forgotten here), or None."""
        victim = None
        if len(self._slots) >= self.limits.max_connections:
            victim = self._victim(did, now_ms, cost_of)
            if victim is None:
                return False, None
            del self._slots[victim]
        self._slots[conn] = Slot(did, now_ms, now_ms)
        return True, victim

    def _victim(self, did: str, now_ms: int, cost_of: Callable[[str], float]) -> Hashable | None:
        """The costliest stranger if it costs more than the newcomer, else the one idle longest if idle
        long enough, else None."""
        costs = {conn: cost_of(slot.did) for conn, slot in self._slots.items()}
        costly = max(self._slots, key=lambda c: (costs[c], -self._slots[c].active_ms))
        if costs[costly] > cost_of(did):
            return costly
        idle = min(self._slots, key=lambda c: self._slots[c].active_ms)
        return idle if now_ms - self._slots[idle].active_ms >= self.limits.idle_evict_ms else None

    def admit_stream_open(self, conn: Hashable, now_ms: int) -> bool:
        """Whether the peer of inbound connection ``conn`` may open one more stream now (a connection
        not counted here, a known peer's or our own dial, always may)."""
        slot = self._slots.get(conn)
        if slot is None:
            return True
        if slot.opens is None:
            slot.opens = Rate(self.limits.stream_opens_per_second, self.limits.stream_opens_burst)
        slot.opened += 1
        if not slot.opens.take(now_ms):
            return False
        shared = self._stream_opens.take(now_ms)  # a free one takes a token too, when there is one
        return shared or slot.opened <= self.limits.free_stream_opens

    def release(self, conn: Hashable) -> None:
        """``conn`` closed (whoever held it; a connection never counted is ignored)."""
        self._slots.pop(conn, None)

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Stop counting connections whose peer no longer satisfies ``keep`` (it became known)."""
        for conn in [c for c, slot in self._slots.items() if not keep(slot.did)]:
            del self._slots[conn]

    def touch(self, did: str, now_ms: int) -> None:
        """``did`` sent input the node worked on: it is not idle."""
        for slot in self._slots.values():
            if slot.did == did:
                slot.active_ms = now_ms

    @property
    def connected(self) -> int:
        return len(self._slots)

    # --- streams --------------------------------------------------------------------

    def begin_stream(self, did: str) -> bool:
        if self.streams >= self.limits.max_streams:
            return False
        self.streams += 1
        self._streams[did] = self._streams.get(did, 0) + 1
        return True

    def end_stream(self, did: str) -> None:
        """A stream ``begin_stream`` counted for ``did`` ended (one never counted is ignored)."""
        n = self._streams.get(did, 0)
        if n:
            self.streams -= 1
            if n == 1:
                del self._streams[did]
            else:
                self._streams[did] = n - 1
