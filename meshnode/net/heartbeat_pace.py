"""How often a peer's heartbeats are taken: at most one per ``min_gap_ms`` (sans-IO).

Heartbeats travel one hop, on a stream each peer opens to us
(``heartbeat_stream``). An honest peer writes one every ``heartbeat_ms`` (+-10 %);
one that writes faster gains nothing, and what it sends beyond one heartbeat per
``min_gap_ms`` is not even decoded (the node counts it as ignored). The gap is
a quarter of this node's own interval, so a peer configured with a shorter
interval than ours is still heard, only not at its full rate.
"""

from __future__ import annotations


class HeartbeatPace:
    def __init__(self, min_gap_ms: int):
        self.min_gap_ms = max(0, int(min_gap_ms))
        self._last: dict[str, int] = {}  # DID -> when its last heartbeat was let through

    def allow(self, peer: str, now_ms: int) -> bool:
        """Whether a heartbeat from ``peer`` arriving at ``now_ms`` is looked at (then it counts)."""
        last = self._last.get(peer)
        if last is not None and now_ms - last < self.min_gap_ms:
            return False
        self._last[peer] = now_ms
        return True

    def forget(self, peer: str) -> None:
        """``peer`` has no heartbeat stream open any more: its next one is taken at once."""
        self._last.pop(peer, None)

    def __len__(self) -> int:
        return len(self._last)
