"""The consensus topic's gossip envelope: the messages one node sends at once, in one gossip message.

One core step often says several things together: a node asked for a value
that it also proposes sends a request, its proposal and its prevote; a
proposer that decides a height sends the next height's proposal and its
prevote. Each gossip message costs every node of the mesh a receive, a
relay and two duplicates to drop (a few ms of Python each), so they travel
as one: the deterministic CBOR array ``[[+ message bytes], counter]``
(protocols/consensus.md section 3). The counter makes a deliberate resend a
new gossip message (GossipSub drops content it has seen).
"""

from __future__ import annotations

from meshnode.domain.consensus import messages as cm
from meshnode.base.container import cbor
from meshnode.base.errors import MeshnodeError

MAX_BUNDLE = 16  # messages in one gossip message
BUNDLE_BYTES = 64 * 1024  # messages are packed together up to this size; a bigger one (a commit) goes alone
MAX_GOSSIP = cm.MAX_MESSAGE + 64  # one message of the largest size, and the envelope


def bundles(encoded: list[bytes]) -> list[list[int]]:
    """The indexes of ``encoded`` grouped into gossip messages, in order: consecutive messages
    share one while it holds at most ``MAX_BUNDLE`` of them and ``BUNDLE_BYTES`` bytes."""
    out: list[list[int]] = []
    size = 0
    for i, data in enumerate(encoded):
        if out and len(out[-1]) < MAX_BUNDLE and size + len(data) <= BUNDLE_BYTES:
            out[-1].append(i)
            size += len(data)
        else:
            out.append([i])
            size = len(data)
    return out


def wrap(encoded: list[bytes], counter: int) -> bytes:
    return cbor.encode([list(encoded), counter])


def unwrap(data: bytes) -> list[bytes]:
    """The encoded messages of a gossip message (each still to be decoded and verified);
    MessageError if the envelope is malformed."""
    try:
        payload, _ = cbor.decode(data, max_bytes=MAX_GOSSIP, max_depth=2, max_items=MAX_BUNDLE + 3)
    except MeshnodeError as exc:
        raise cm.MessageError("bad_message", f"consensus gossip: {exc.reason}") from None
    if (type(payload) is not list or len(payload) != 2 or type(payload[0]) is not list
            or not 1 <= len(payload[0]) <= MAX_BUNDLE or any(type(x) is not bytes for x in payload[0])
            or type(payload[1]) is not int or payload[1] < 0):
        raise cm.MessageError("bad_message", f"a consensus gossip payload is [[1 to {MAX_BUNDLE} messages], counter]")
    return payload[0]
