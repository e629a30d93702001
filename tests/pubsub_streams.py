"""A fake inbound pubsub stream for the tests of the pubsub read loop (py-libp2p's and pubsub_guard's)."""

from __future__ import annotations

from types import SimpleNamespace


class FramesStream:
    """An inbound pubsub stream from ``peer_id`` at ``address`` carrying ``frames`` (each length-prefixed
    here), then its end; ``resets`` counts its resets."""

    def __init__(self, peer_id, frames: list[bytes], address: tuple = ("203.0.113.5", 4001)):
        from libp2p.utils.varint import encode_varint_prefixed

        self.data = b"".join(encode_varint_prefixed(f) for f in frames)
        self.muxed_conn = SimpleNamespace(peer_id=peer_id, get_remote_address=lambda: address)
        self.metric_send_channel = None
        self.resets = 0

    async def read(self, n: int = -1) -> bytes:
        out, self.data = self.data[:n], self.data[n:]
        return out

    async def reset(self) -> None:
        self.resets += 1
