"""Length-prefixed frames on a libp2p stream: unsigned varint length, then the body.

The varint length prefix is libp2p's own convention (multiformats
unsigned-varint), so other implementations frame the same way. Sans-IO: bytes
in, frames out; a frame over the limit is refused before its body is read.
"""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError

MAX_VARINT_BYTES = 9  # multiformats unsigned-varint: at most 63 bits


class FrameError(MeshnodeError):
    """A peer broke the framing: a length over the limit or a malformed varint."""


def encode_varint(n: int) -> bytes:
    if n < 0:
        raise ValueError("varints are unsigned")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_frame(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def sent(metrics, protocol: str, frame: bytes) -> bytes:
    """``frame`` counted as written on the wire (``wire_messages``, ``wire_bytes`` by protocol:
    what bench/team.py divides per task); returned as it is."""
    metrics.inc("wire_messages", protocol=protocol)
    metrics.inc("wire_bytes", len(frame), protocol=protocol)
    return frame


class FrameDecoder:
    """Feed bytes as they arrive; take whole frames out.

    Raises FrameError for a frame longer than ``max_frame`` (as soon as its
    length is known) and for a non-minimal or overlong varint.
    """

    def __init__(self, max_frame: int):
        self.max_frame = max_frame
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while True:
            header = self._parse_length()
            if header is None:
                return frames
            length, size = header
            if len(self._buffer) < size + length:
                return frames
            frames.append(bytes(self._buffer[size: size + length]))
            del self._buffer[: size + length]

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def _parse_length(self) -> tuple[int, int] | None:
        n = shift = 0
        for i, byte in enumerate(self._buffer[:MAX_VARINT_BYTES]):
            n |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if i > 0 and byte == 0:
                    raise FrameError("bad_frame", "length prefix is not minimally encoded")
                if n > self.max_frame:
                    raise FrameError("frame_too_large", f"frame of {n} bytes, the limit is {self.max_frame}")
                return n, i + 1
            shift += 7
        if len(self._buffer) >= MAX_VARINT_BYTES:
            raise FrameError("bad_frame", "length prefix longer than 9 bytes")
        return None
