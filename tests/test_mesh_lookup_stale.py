"""A lookup never answers with (nor records in the peers table) an announce older than one this
node has already verified: a peer may replay an old, validly signed copy (review of issue 18)."""

from __future__ import annotations

import trio
import trio.testing

from meshnode.container import now_ms
from meshnode.identity.keys import NodeKey
from meshnode.metrics import Metrics
from meshnode.net import dht_direct
from meshnode.net.announce import make_announce, record_key, select_record, validate_record
from meshnode.net.mesh_lookup import AnnounceCache, LookupMixin


class _ValueStore:
    def remove(self, key):
        return True


class _Validator:
    def __init__(self, node):
        self.node = node

    def validate(self, key, value):
        self.node._heard_announce(validate_record(key, value, now_ms()))

    def select(self, key, values):
        return select_record([validate_record(key, v, now_ms()) for v in values])


class _Dht:
    def __init__(self, node):
        self.value_store = _ValueStore()
        self.validator = _Validator(node)


class _Store:
    def __init__(self):
        self.written = []

    async def write(self, fn, did, **fields):
        self.written.append((did, fields))


class _Node(LookupMixin):
    def __init__(self):
        self.key = NodeKey.generate()
        self.announces = AnnounceCache(fresh_s=10)
        self._looked_up = {}
        self.metrics = Metrics()
        self.store = _Store()
        self.clock = now_ms
        self.host = None
        self.dht = _Dht(self)


def _announce(key, at, port):
    return make_announce(key, name="n", addresses=[f"/ip4/127.0.0.1/tcp/{port}"], now_ms=at)


async def test_a_replayed_older_announce_does_not_replace_the_newer_one(monkeypatch):
    owner = NodeKey.generate()
    t = now_ms()
    old, new = _announce(owner, t - 60_000, 4001), _announce(owner, t, 4002)
    node = _Node()
    node.dht.validator.validate(record_key(owner.did), new.to_bytes())  # the owner's PUT: verified, cached

    async def replay(dht, key, peers, enough=3, owner=None):
        dht.validator.validate(key, old.to_bytes())
        return [old.to_bytes()]  # a peer answering with a copy it kept from a minute ago

    monkeypatch.setattr(dht_direct, "closest_connected", lambda host, key, n: ["p"])
    node.host = type("H", (), {"get_connected_peers": staticmethod(lambda: ["p"])})()  # not the owner
    monkeypatch.setattr(dht_direct, "get_value_from_peers", replay)
    with trio.fail_after(5):
        got = await node.lookup_announce(owner.did, cached=False)
        assert got.did == new.did  # not the replayed older copy
        # the cached copy's addresses did not answer: an older copy is not "a newer announce"
        assert await node._newer_announce(owner.did, new) is None
    assert all(f["announce_did"] != old.did for _, f in node.store.written)


async def test_a_push_of_an_older_content_does_not_mark_peers_told_the_newer_one(monkeypatch):
    """announce_now (a control command) and the maintenance round push concurrently: peers that
    accepted the older content are not counted as told the newer one (they would never be asked)."""
    node = _Node()
    node.host = type("H", (), {"get_connected_peers": staticmethod(lambda: ["p"])})()
    older, newer = _announce(node.key, now_ms(), 4001), _announce(node.key, now_ms() + 1, 4002)
    release = trio.Event()

    async def put(dht, key, value, peers):
        if value == older.to_bytes():
            await release.wait()  # slow under load
            return set(peers)
        return set()  # the newer one did not reach p this round

    monkeypatch.setattr(dht_direct, "put_value_to_peers", put)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(node._push_announce, older)
            await trio.testing.wait_all_tasks_blocked()  # the older push is in flight
            await node._push_announce(newer)
            release.set()
    assert "p" not in node._pushed_to


async def test_a_peer_that_left_and_came_back_is_pushed_the_announce_again(monkeypatch):
    """A peer that disconnected may return with an empty DHT store (restarted): it is told again."""
    node = _Node()
    connected = ["p"]
    node.host = type("H", (), {"get_connected_peers": staticmethod(lambda: list(connected))})()
    announce = _announce(node.key, now_ms(), 4001)
    told: list = []

    async def put(dht, key, value, peers):
        told.extend(peers)
        return set(peers)

    monkeypatch.setattr(dht_direct, "put_value_to_peers", put)
    await node._push_announce(announce)
    await node._push_announce(announce)  # still connected: not asked twice
    assert told == ["p"]
    connected.clear()
    await node._push_announce(announce)
    connected.append("p")  # back, maybe restarted
    await node._push_announce(announce)
    assert told == ["p", "p"]


async def test_newly_identified_peers_are_told_the_announce_in_one_push_at_once(monkeypatch, autojump_clock):
    """A burst of new connections gives one push within PUSH_GATHER_S, not one at the next
    maintenance round (finds asked while a mesh formed waited out the 10 s lookup)."""
    from meshnode.net.mesh_lookup import PUSH_GATHER_S

    node = _Node()
    node.host = type("H", (), {"get_connected_peers": staticmethod(lambda: ["a", "b", "c"])})()
    node._announce = _announce(node.key, now_ms(), 4001)
    node._push_wanted = trio.Event()
    pushes: list = []

    async def put(dht, key, value, peers):
        pushes.append((trio.current_time(), sorted(peers)))
        return set(peers)

    monkeypatch.setattr(dht_direct, "put_value_to_peers", put)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(node._push_on_connect)
        started = trio.current_time()
        for _ in range(3):  # three peers identified in a burst
            node._push_wanted.set()
            await trio.sleep(0.01)
        await trio.sleep(5)
        nursery.cancel_scope.cancel()
    assert [peers for _, peers in pushes] == [["a", "b", "c"]]
    assert pushes[0][0] - started <= PUSH_GATHER_S + 0.05
