"""A container for everyone (meshnode.net.mesh_publish): gossiped when it fits one gossip
message, else pushed directly to each connected peer, and the answer says which way it went and to
whom (issue 35, defect 1: a 60-64 KiB public note once ended in an error although it was stored)."""

from __future__ import annotations

import trio
import trio.testing

from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.domain.notes import MAX_TEXT, make_note
from meshnode.net.errors import NetError
from meshnode.net.mesh_gossip import MAX_GOSSIP_BYTES
from meshnode.net.mesh_publish import publish

KEY = NodeKey(bytes([3]) * 32)
T = 1_800_000_000_000
TAKES, REFUSES, DOWN, SLOW = "did:key:takes", "did:key:refuses", "did:key:down", "did:key:slow"


class Wire:
    """Records gossip and pushes; each peer answers as its name says (SLOW never does)."""

    def __init__(self):
        self.gossiped, self.pushed = [], []

    async def gossip(self, c) -> None:
        self.gossiped.append(c.did)

    async def push(self, did: str, containers: list) -> dict:
        self.pushed.append((did, [c.did for c in containers]))
        if did == DOWN:
            raise NetError("unreachable", f"{did} cannot be reached")
        if did == SLOW:
            await trio.sleep_forever()
        return {"op": "ack", "accepted": [] if did == REFUSES else [c.did for c in containers], "duplicates": [],
                "rejected": [{"index": 0, "code": "quota", "reason": "full"}] if did == REFUSES else []}


def note(size: int):
    return make_note(KEY, "x" * size, now_ms=T, audience="public")


async def test_a_note_that_fits_one_gossip_message_is_gossiped_and_pushed_to_no_one():
    wire, small = Wire(), note(1000)
    assert await publish(small, gossip=wire.gossip, push=wire.push, connected=[TAKES]) == {"by": "gossip"}
    assert wire.gossiped == [small.did] and wire.pushed == []


def test_a_note_too_large_for_gossip_is_pushed_to_every_connected_peer_and_the_answer_says_so():
    big, metrics = note(MAX_TEXT), Metrics()
    assert len(big.to_bytes()) > MAX_GOSSIP_BYTES
    wire = Wire()

    async def main():
        return await publish(big, gossip=wire.gossip, push=wire.push, connected=[SLOW, DOWN, TAKES, REFUSES, TAKES],
                             metrics=metrics)

    sent = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))  # SLOW's wait passes at once
    assert sent == {"by": "push", "bytes": len(big.to_bytes()), "gossip_max": MAX_GOSSIP_BYTES,
                    "pushed": [TAKES], "failed": sent["failed"], "later": [SLOW]}
    assert sorted(sent["failed"]) == [DOWN, REFUSES]  # unreachable, or refused it: sync tries again later
    assert wire.gossiped == []  # never published where py-libp2p would corrupt it
    assert sorted(d for d, _ in wire.pushed) == sorted([DOWN, REFUSES, SLOW, TAKES])  # each peer once
    assert metrics.get("publish_pushed_instead_of_gossip") == 1
    assert metrics.get("publish_push_failed", reason="unreachable") == 1
