"""The maintenance cadence marks the DHT work done only when the announce put finished: a put
whose walk outlasted its 15 s reached nobody and is tried again next round (review of issue 18)."""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_lookup import Discovery


class _ValueStore:
    def __init__(self):
        self.held = {}

    def put(self, key, value):
        self.held[key] = value


def _discovery(put_value) -> Discovery:
    """A node whose DHT puts by ``put_value`` and whose connected peers take every push at once."""
    async def push(announce):
        pass

    async def provide(key):
        pass

    discovery = Discovery(Libp2pParts(), NodeKey.generate(), None, None, PeerEvents(), Metrics(), now_ms, name="n",
                          bootstrap=[], maintenance_s=30.0)
    discovery.parts.dht = SimpleNamespace(value_store=_ValueStore(), put_value=put_value, provide=provide)
    discovery._push_announce = push
    return discovery


def test_a_put_that_timed_out_is_not_published():
    async def stalled(key, value):
        await trio.sleep_forever()  # a walk on a busy mesh that outlasts its deadline

    async def quick(key, value):
        pass

    async def main():
        return await _discovery(stalled)._publish_announce(), await _discovery(quick)._publish_announce()

    timed_out, finished = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert (timed_out, finished) == (False, True)


def test_a_changed_routing_table_makes_the_dht_walks_due_again_only_after_a_gap():
    """find-tail: while a mesh forms the routing table changes every round, and each round's put and
    refresh walks loaded the machine; content changes are still due at once."""
    from meshnode.net.announce import TABLE_CHANGE_GAP_MS, MaintenanceCadence

    cadence = MaintenanceCadence(republish_ms=600_000, rng=lambda: 0.5)
    table, content = frozenset({"a"}), (("/ip4/127.0.0.1/tcp/1",), (), ())
    cadence.done(0, table, content)
    assert not cadence.due(TABLE_CHANGE_GAP_MS - 1, table | {"b"}, content)
    assert cadence.due(TABLE_CHANGE_GAP_MS, table | {"b"}, content)
    assert cadence.due(1, table | {"b"}, (("/ip4/10.0.0.1/tcp/1",), (), ()))  # new addresses: at once
    assert not cadence.due(TABLE_CHANGE_GAP_MS, table, content)  # nothing changed
