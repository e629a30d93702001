"""Per-peer standing: rate limits, outstanding requests, and invalid-input counts.

Sans-IO bookkeeping for the network layer. A peer that sends invalid
containers or breaks the framing loses standing; past ``invalid_threshold``
it is cut off (disconnected and refused for ``ban_ms``). The counts are what
the reputation work will consume later. Time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PeerLimits:
    max_frame_bytes: int = 1024 * 1024
    messages_per_second: float = 50.0
    burst: int = 100
    max_outstanding: int = 8
    invalid_threshold: int = 20
    ban_ms: int = 10 * 60 * 1000


@dataclass
class PeerRecord:
    tokens: float
    refilled_ms: int
    outstanding: int = 0
    valid: int = 0
    invalid: int = 0
    invalid_by_code: dict[str, int] = field(default_factory=dict)
    rate_limited: int = 0
    banned_until_ms: int = 0


class Standing:
    def __init__(self, limits: PeerLimits = PeerLimits()):
        self.limits = limits
        self._peers: dict[str, PeerRecord] = {}

    def _record(self, peer: str, now_ms: int) -> PeerRecord:
        rec = self._peers.get(peer)
        if rec is None:
            rec = self._peers[peer] = PeerRecord(tokens=float(self.limits.burst), refilled_ms=now_ms)
        return rec

    def is_banned(self, peer: str, now_ms: int) -> bool:
        rec = self._peers.get(peer)
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
        rec = self._peers.get(peer)
        if rec is not None and rec.outstanding > 0:
            rec.outstanding -= 1

    def record_valid(self, peer: str, now_ms: int, n: int = 1) -> None:
        self._record(peer, now_ms).valid += n

    def record_invalid(self, peer: str, code: str, now_ms: int) -> bool:
        """Count one invalid input; True when the peer has just crossed the threshold (cut it off)."""
        rec = self._record(peer, now_ms)
        rec.invalid += 1
        rec.invalid_by_code[code] = rec.invalid_by_code.get(code, 0) + 1
        if rec.invalid >= self.limits.invalid_threshold and rec.banned_until_ms <= now_ms:
            rec.banned_until_ms = now_ms + self.limits.ban_ms
            return True
        return False

    def peers(self) -> list[str]:
        return list(self._peers)

    def summary(self, peer: str) -> dict:
        rec = self._peers.get(peer)
        if rec is None:
            return {"valid": 0, "invalid": 0, "invalid_by_code": {}, "rate_limited": 0, "banned_until_ms": 0}
        return {"valid": rec.valid, "invalid": rec.invalid, "invalid_by_code": dict(rec.invalid_by_code),
                "rate_limited": rec.rate_limited, "banned_until_ms": rec.banned_until_ms}
