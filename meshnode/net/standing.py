"""Per-peer standing: rate limits, outstanding requests, and invalid-input counts.

Sans-IO bookkeeping for the network layer. A peer that sends invalid
containers or breaks the framing loses standing: each invalid input weighs
by the cost it caused (``invalid_weight``: a megabyte of junk that took a
second to refuse is not one mistake), and past ``invalid_threshold`` the peer
is cut off (disconnected and refused for ``ban_ms``). The counts are what the
reputation work consumes. Identities are free, so at most ``max_peers``
records are kept: the least recently seen idle one is forgotten first (one
with requests running or a ban still running at the time only when every
other record is such; bans also persist in the store). Time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from meshnode.net.budget import BoundedLRU

INVALID_COST_UNIT_MS = 50.0  # an invalid input that cost this much CPU weighs one more
INVALID_BYTES_UNIT = 64 * 1024  # an invalid input this large weighs one more


def invalid_weight(cost_ms: float = 0.0, nbytes: int = 0) -> float:
    """How much one invalid input counts toward the cut-off: by the work and bytes it caused, at least 1."""
    return max(1.0, cost_ms / INVALID_COST_UNIT_MS, nbytes / INVALID_BYTES_UNIT)


@dataclass(frozen=True)
class PeerLimits:
    max_frame_bytes: int = 1024 * 1024
    messages_per_second: float = 50.0
    burst: int = 100
    max_outstanding: int = 8
    invalid_threshold: int = 20
    ban_ms: int = 10 * 60 * 1000
    max_peers: int = 4096  # standing records kept in memory (idle ones forgotten first)


@dataclass
class PeerRecord:
    tokens: float
    refilled_ms: int
    outstanding: int = 0
    valid: int = 0
    invalid: int = 0
    invalid_weight: float = 0.0
    invalid_by_code: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    banned_until_ms: int = 0


class Standing:
    def __init__(self, limits: PeerLimits = PeerLimits()):
        self.limits = limits
        self._peers: BoundedLRU[PeerRecord] = BoundedLRU(
            limits.max_peers, may_forget=lambda r, now_ms: r.outstanding == 0 and r.banned_until_ms <= now_ms)

    def _record(self, peer: str, now_ms: int) -> PeerRecord:
        rec = self._peers.get(peer)
        if rec is None:
            rec = self._peers.put(peer, PeerRecord(tokens=float(self.limits.burst), refilled_ms=now_ms), now_ms)
        elif 0 < rec.banned_until_ms <= now_ms:
            rec.banned_until_ms = 0  # the ban is over (its weight stays: the next invalid input cuts it off
            #                          again, as long as it is remembered)
        return rec

    def is_banned(self, peer: str, now_ms: int) -> bool:
        rec = self._peers.peek(peer)
        return rec is not None and rec.banned_until_ms > now_ms

    def allow_message(self, peer: str, now_ms: int) -> bool:
        """Token bucket: ``messages_per_second`` sustained, ``burst`` at once."""
        rec = self._record(peer, now_ms)
        elapsed = max(0, now_ms - rec.refilled_ms)
        rec.tokens = min(float(self.limits.burst), rec.tokens + elapsed * self.limits.messages_per_second / 1000)
        rec.refilled_ms = now_ms
        if rec.tokens >= 1:
            rec.tokens -= 1
            return True
        rec.rate_limited += 1
        return False

    def begin_request(self, peer: str, now_ms: int) -> bool:
        rec = self._record(peer, now_ms)
        if rec.outstanding >= self.limits.max_outstanding:
            return False
        rec.outstanding += 1
        return True

    def end_request(self, peer: str) -> None:
        rec = self._peers.peek(peer)
        if rec is not None and rec.outstanding > 0:
            rec.outstanding -= 1

    def record_valid(self, peer: str, now_ms: int, n: int = 1) -> None:
        self._record(peer, now_ms).valid += n

    def record_invalid(self, peer: str, code: str, now_ms: int, weight: float = 1.0) -> bool:
        """Count one invalid input of ``weight`` (``invalid_weight``); True when the peer has just
        crossed the threshold (cut it off)."""
        rec = self._record(peer, now_ms)
        rec.invalid += 1
        rec.invalid_weight += max(1.0, weight)
        rec.invalid_by_code[code] = rec.invalid_by_code.get(code, 0) + 1
        if rec.invalid_weight >= self.limits.invalid_threshold and rec.banned_until_ms <= now_ms:
            rec.banned_until_ms = now_ms + self.limits.ban_ms
            return True
        return False

    def restore_ban(self, peer: str, banned_until_ms: int, now_ms: int) -> None:
        """A ban recorded before this run (peer_standing) lasts until it ends."""
        rec = self._record(peer, now_ms)
        rec.banned_until_ms = max(rec.banned_until_ms, banned_until_ms)

    def peers(self) -> list[str]:
        return list(self._peers.keys())

    def __len__(self) -> int:
        return len(self._peers)

    def summary(self, peer: str) -> dict:
        rec = self._peers.peek(peer)
        if rec is None:
            return {"valid": 0, "invalid": 0, "invalid_by_code": {}, "rate_limited": 0, "banned_until_ms": 0}
        return {"valid": rec.valid, "invalid": rec.invalid, "invalid_by_code": dict(rec.invalid_by_code),
                "rate_limited": rec.rate_limited, "banned_until_ms": rec.banned_until_ms}
