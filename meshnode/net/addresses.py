"""Limits per remote address, since identities are free (sans-IO, time passed in).

Theory of operation
-------------------
A new key costs an attacker nothing; a new address costs something. But an
address may be a NAT with honest peers behind it, so what one *identity* does
(invalid containers, big or slow frames, gossip garbage) is held against that
identity only (``standing.Standing``: cut off and banned, the ban stored). The
address is held to account only for what happens before any identity is
known or while none is used, *handshake-level abuse*:

* inbound connections per address are rate-limited (a token bucket of
  ``connections_per_minute`` with a burst of as many): excess connections are
  closed as they are accepted, and each such refusal is a strike (``rate``);
* a connection that fails the Noise or multistream handshake, or does not
  finish it within py-libp2p's inbound upgrade timeout (10 s), is a strike
  (``handshake``);
* an inbound connection that ends without its peer ever opening a stream
  (connect-and-leave churn: every libp2p peer that means to talk opens one,
  identify or pubsub) is a strike (``no_stream``).

``abuse_to_ban`` strikes within ``abuse_window_ms`` ban the address for
``ban_ms``: every new connection from it is closed as it is accepted. The ban
is short and renewed while refused attempts keep coming at a flood's pace:
faster than ``ban_renew_factor`` times the connection rate, past a burst of
``connections_per_minute`` (a bucket of its own, full when the ban starts).
So it lifts at most ``ban_ms`` after the flood stops, and an honest new
identity at that address connects from then on: its retries during the ban
(py-libp2p dials again at once after a refusal: ~2 attempts a second were
measured) neither renew the ban nor spend the connection rate, which refills
while the address is banned.

Concurrent inbound streams per address are also bounded for unknown peers.

Known peers are exempt from all of it (the caller does not ask): an honest
friend may share a NAT with an attacker, and in tests every process is on
127.0.0.1. Every table is a bounded LRU (``budget.BoundedLRU``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from meshnode.net.budget import BoundedLRU

STRIKES = ("rate", "handshake", "no_stream")  # the handshake-level abuse an address is banned for


@dataclass(frozen=True)
class AddressLimits:
    connections_per_minute: float = 60.0  # a node reconnecting after each failure, many times over
    abuse_to_ban: int = 30  # strikes within abuse_window_ms: a peer that retries after failures makes a few
    abuse_window_ms: int = 60 * 1000
    ban_ms: int = 30 * 1000  # short: renewed while the flood goes on, lifted this long after it stops
    ban_renew_factor: float = 4.0  # [peers] address_ban_renew_factor: attempts while banned faster than this
    #                                times connections_per_minute renew the ban; an honest peer's retries do not
    max_streams: int = 32  # concurrent inbound exchange and sync streams of unknown peers, per address
    max_keys: int = 4096


@dataclass
class AddressRecord:
    tokens: float
    refilled_ms: int
    strikes: deque = field(default_factory=deque)  # when its last strikes were (at most abuse_to_ban)
    banned_until_ms: int = 0
    streams: int = 0
    flood_tokens: float = 0.0  # attempts while banned that do not renew the ban (refilled from the ban's start)
    flood_refilled_ms: int = 0


class AddressGuard:
    def __init__(self, limits: AddressLimits = AddressLimits()):
        self.limits = limits
        self._records: BoundedLRU[AddressRecord] = BoundedLRU(
            limits.max_keys, may_forget=self._may_forget)

    def _may_forget(self, rec: AddressRecord, now_ms: int) -> bool:
        """Idle: no streams running, no ban running, no strike within ``abuse_window_ms`` at ``now_ms``."""
        return (rec.streams == 0 and rec.banned_until_ms <= now_ms
                and all(now_ms - t >= self.limits.abuse_window_ms for t in rec.strikes))

    def _record(self, host: str, now_ms: int) -> AddressRecord:
        rec = self._records.get(host)
        if rec is None:
            rec = self._records.put(host, AddressRecord(self.limits.connections_per_minute, now_ms,
                                                        deque(maxlen=self.limits.abuse_to_ban)), now_ms)
        return rec

    def is_banned(self, host: str, now_ms: int) -> bool:
        rec = self._records.peek(host)
        return rec is not None and rec.banned_until_ms > now_ms

    def banned_until(self, host: str) -> int:
        rec = self._records.peek(host)
        return 0 if rec is None else rec.banned_until_ms

    def _take_token(self, rec: AddressRecord, now_ms: int) -> bool:
        per_ms = self.limits.connections_per_minute / 60_000
        rec.tokens = min(self.limits.connections_per_minute, rec.tokens + max(0, now_ms - rec.refilled_ms) * per_ms)
        rec.refilled_ms = max(rec.refilled_ms, now_ms)
        if rec.tokens < 1:
            return False
        rec.tokens -= 1
        return True

    def _take_flood_token(self, rec: AddressRecord, now_ms: int) -> bool:
        per_ms = self.limits.ban_renew_factor * self.limits.connections_per_minute / 60_000
        rec.flood_tokens = min(self.limits.connections_per_minute,
                               rec.flood_tokens + max(0, now_ms - rec.flood_refilled_ms) * per_ms)
        rec.flood_refilled_ms = max(rec.flood_refilled_ms, now_ms)
        if rec.flood_tokens < 1:
            return False
        rec.flood_tokens -= 1
        return True

    def allow_connection(self, host: str, now_ms: int) -> str | None:
        """None when a new inbound connection from ``host`` may stay, else why not (``address_banned``,
        ``rate``). An attempt over the rate is a strike; attempts at a flood's pace while banned renew the ban
        (``ban_renew_factor``)."""
        rec = self._record(host, now_ms)
        if rec.banned_until_ms > now_ms:
            if not self._take_flood_token(rec, now_ms):
                rec.banned_until_ms = now_ms + self.limits.ban_ms  # the flood goes on
            return "address_banned"
        if not self._take_token(rec, now_ms):
            self.strike(host, "rate", now_ms)
            return "rate"
        return None

    def strike(self, host: str, kind: str, now_ms: int) -> bool:
        """One more handshake-level abuse (``STRIKES``) from ``host``; True when it bans the address now."""
        rec = self._record(host, now_ms)
        rec.strikes.append(now_ms)
        if (rec.banned_until_ms <= now_ms and len(rec.strikes) >= self.limits.abuse_to_ban
                and now_ms - rec.strikes[0] < self.limits.abuse_window_ms):
            rec.banned_until_ms = now_ms + self.limits.ban_ms
            rec.strikes.clear()
            rec.flood_tokens, rec.flood_refilled_ms = self.limits.connections_per_minute, now_ms
            return True
        return False

    def begin_stream(self, host: str, now_ms: int) -> bool:
        rec = self._record(host, now_ms)
        if rec.streams >= self.limits.max_streams:
            return False
        rec.streams += 1
        return True

    def end_stream(self, host: str) -> None:
        rec = self._records.peek(host)
        if rec is not None and rec.streams > 0:
            rec.streams -= 1

    def __len__(self) -> int:
        return len(self._records)
