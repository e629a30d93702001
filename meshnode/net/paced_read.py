"""Reading one length-prefixed frame within a time that grows with its announced length.

Why: a fixed timeout for a frame of up to 8 MiB either lets a slow-loris peer
hold a stream for long, or cuts an honest peer on a slow link (8 MiB in 10 s
needs 840 KiB/s). So the length prefix must arrive within ``base_s``, and then
the body gets ``base_s`` plus its announced length at ``min_rate`` bytes a
second: a trickle below that rate is still cut. Errors are those of
py-libp2p's ``read_varint_prefixed_bytes_limited`` (the callers catch them),
and ``trio.TooSlowError`` when the time is up.
"""

from __future__ import annotations

import trio

MIN_FRAME_RATE = 64 * 1024  # bytes a second: a poor mobile link still does better; a trickle does not
FRAME_BASE_S = 10.0  # for the length prefix, and added to the body's own time


def frame_time_s(length: int, base_s: float = FRAME_BASE_S, min_rate: float = MIN_FRAME_RATE) -> float:
    """How long a frame announcing ``length`` bytes may take, from its first byte."""
    return base_s + length / min_rate


async def read_paced_frame(reader, max_length: int, base_s: float = FRAME_BASE_S,
                           min_rate: float = MIN_FRAME_RATE, before_body=None) -> bytes:
    """One varint-prefixed frame of at most ``max_length`` bytes, read within ``frame_time_s``.
    ``before_body(length)``, when given, is called once the length is known and before the body is
    read: it may raise to refuse the frame unread (the sender is then held by the stream's flow
    control window, not read at our cost)."""
    from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
    from libp2p.utils.varint import ParseError, decode_uvarint

    with trio.fail_after(base_s) as scope:
        prefix = b""
        for _ in range(10):  # a 64-bit uvarint takes 10 bytes at most
            b = await reader.read(1)
            if not b:
                raise IncompleteReadError("Stream ended while reading varint length prefix",
                                          expected_bytes=1, received_bytes=0)
            prefix += b
            if b[0] & 0x80 == 0:
                break
        else:
            raise ParseError("Varint decoding error: integer exceeds maximum size of 64 bits")
        length = decode_uvarint(prefix)
        if length > max_length:
            raise MessageTooLarge(f"Message length {length} exceeds maximum allowed {max_length}")
        if before_body is not None:
            before_body(length)
        scope.deadline += length / min_rate
        return await read_body(reader, length)


async def read_body(reader, length: int) -> bytes:
    """Exactly ``length`` bytes (the caller bounds the time); IncompleteReadError when the stream ends."""
    from libp2p.io.exceptions import IncompleteReadError

    body = bytearray()
    while len(body) < length:
        chunk = await reader.read(length - len(body))
        if not chunk:
            raise IncompleteReadError(f"Incomplete message: expected {length}, got {len(body)}",
                                      expected_bytes=length, received_bytes=len(body))
        body.extend(chunk)
    return bytes(body)
