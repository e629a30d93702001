"""Limits per remote address, since identities are free (sans-IO, time passed in).

Theory of operation
-------------------
A new key costs an attacker nothing; a new address costs something. So,
besides each peer's own standing:

* inbound connections per address are rate-limited (a token bucket of
  ``connections_per_minute`` with a burst of as many): excess connections are
  closed as they are made;
* an address whose identities keep getting cut off (``cutoffs_to_ban`` cut-offs
  while the previous ones are remembered, for ``ban_ms``) is refused at connect
  for ``ban_ms``;
* concurrent inbound streams per address are bounded for unknown peers.

Known peers are exempt from all three (the caller does not ask): an honest
friend may share a NAT with an attacker, and in tests every process is on
127.0.0.1. Every table is a bounded LRU (``budget.BoundedLRU``).
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.net.budget import BoundedLRU


@dataclass(frozen=True)
class AddressLimits:
    connections_per_minute: float = 60.0  # a node reconnecting after each failure, many times over
    cutoffs_to_ban: int = 3  # one cut-off may be a buggy peer; three identities from one address is a pattern
    ban_ms: int = 10 * 60 * 1000  # as long as a peer's own ban
    max_streams: int = 32  # concurrent inbound exchange and sync streams of unknown peers, per address
    max_keys: int = 4096


@dataclass
class AddressRecord:
    tokens: float
    refilled_ms: int
    cutoffs: list[int]  # when its identities were cut off (within the last ban_ms)
    banned_until_ms: int = 0
    streams: int = 0


class AddressGuard:
    def __init__(self, limits: AddressLimits = AddressLimits()):
        self.limits = limits
        self._records: BoundedLRU[AddressRecord] = BoundedLRU(
            limits.max_keys, may_forget=self._may_forget)

    def _may_forget(self, rec: AddressRecord, now_ms: int) -> bool:
        """Idle: no streams running, no ban running, no cut-off within ``ban_ms`` at ``now_ms``."""
        return (rec.streams == 0 and rec.banned_until_ms <= now_ms
                and all(now_ms - t >= self.limits.ban_ms for t in rec.cutoffs))

    def _record(self, host: str, now_ms: int) -> AddressRecord:
        rec = self._records.get(host)
        if rec is None:
            rec = self._records.put(host, AddressRecord(self.limits.connections_per_minute, now_ms, []), now_ms)
        rec.cutoffs = [t for t in rec.cutoffs if now_ms - t < self.limits.ban_ms]
        return rec

    def is_banned(self, host: str, now_ms: int) -> bool:
        rec = self._records.peek(host)
        return rec is not None and rec.banned_until_ms > now_ms

    def allow_connection(self, host: str, now_ms: int) -> str | None:
        """None when a new inbound connection from ``host`` may stay, else why not (``banned``, ``rate``)."""
        if self.is_banned(host, now_ms):
            return "address_banned"
        rec = self._record(host, now_ms)
        per_ms = self.limits.connections_per_minute / 60_000
        rec.tokens = min(self.limits.connections_per_minute, rec.tokens + (now_ms - rec.refilled_ms) * per_ms)
        rec.refilled_ms = now_ms
        if rec.tokens < 1:
            return "rate"
        rec.tokens -= 1
        return None

    def cut_off(self, host: str, now_ms: int) -> bool:
        """An identity at ``host`` was cut off; True when the address itself is now refused."""
        rec = self._record(host, now_ms)
        rec.cutoffs.append(now_ms)
        if len(rec.cutoffs) >= self.limits.cutoffs_to_ban and rec.banned_until_ms <= now_ms:
            rec.banned_until_ms = now_ms + self.limits.ban_ms
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
