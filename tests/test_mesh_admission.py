"""The Mesh's admission of strangers' containers (mesh_admission), driven without a network."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from meshnode.base.container.errors import ContainerError
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net import libp2p_fixes
from meshnode.net.author_rate import RateSettings
from meshnode.net.liveness import Liveness, Thresholds
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.net.mesh_lookup import ANNOUNCE_RECHECK_MS
from meshnode.net.mesh_sync import _digest
from meshnode.net.not_wanted import NotWanted
from meshnode.domain.notes import make_note
from meshnode.store import Store
from meshnode.store.quotas import Quotas
from meshnode.store.sharing import set_friend

T0 = 1_760_000_000_000
ME, FRIEND, COMMITTEE, STRANGER = (NodeKey(bytes([n]) * 32) for n in range(11, 15))


def count(metrics: Metrics, name: str, **labels) -> int:
    return sum(m["value"] for m in metrics.snapshot()
               if m["name"] == name and all(m["labels"].get(k) == x for k, x in labels.items()))


@pytest.fixture
async def mesh(tmp_path):
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="t", committee_dids=[COMMITTEE.did],
                       quotas=Quotas(author_containers=2, author_bytes=10**6, total_containers=100,
                                     total_bytes=10**9),
                       author_rate=RateSettings(per_author_per_second=0.001, per_author_burst=2,
                                                total_per_second=1000, total_burst=1000),
                       thresholds=Thresholds(1000, 2000, 3000))
    async with await Store.open(tmp_path / "node.db") as store:
        yield Mesh(ME, config, store, Metrics(), clock=lambda: T0)


def note(key: NodeKey, i: int):
    return make_note(key, f"n{i}", now_ms=T0 + i, audience="public")


async def test_own_committee_and_friends_are_known_after_a_refresh(mesh):
    assert ME.did in mesh.known and COMMITTEE.did in mesh.known and FRIEND.did not in mesh.known
    await mesh.store.write(set_friend, FRIEND.did, "p", T0)
    await mesh.refresh_known()
    assert FRIEND.did in mesh.known and STRANGER.did not in mesh.known


async def test_store_from_peer_refuses_over_quota_and_counts_it(mesh):
    outcomes = [(await mesh.admission.store_from_peer(note(STRANGER, i), "did:key:zrelay", "push")).outcome for i in range(3)]
    assert outcomes == ["new", "new", "refused"]
    assert count(mesh.metrics, "containers_refused", reason="author_quota", via="push") == 1
    assert count(mesh.metrics, "invalid_from_peer") == 0
    await mesh.store.write(set_friend, STRANGER.did, "p", T0)
    await mesh.refresh_known()  # a friend now: no quota
    assert (await mesh.admission.store_from_peer(note(STRANGER, 5), None, "gossip")).new


async def test_strangers_containers_by_push_and_sync_are_stored_within_a_write_rate(mesh):
    from meshnode.net.author_rate import StrangerWrites

    mesh.admission.stranger_writes = StrangerWrites(per_second=1, burst=3)  # the clock is frozen: no refill
    others = [NodeKey.generate() for _ in range(5)]
    outcomes = [(await mesh.admission.store_from_peer(note(k, 0), "did:key:zrelay", "sync")).outcome for k in others]
    assert outcomes == ["new", "new", "new", "busy", "busy"]
    assert count(mesh.metrics, "containers_refused", reason="stranger_rate", via="sync") == 2
    assert note(others[3], 0).did not in mesh.admission.not_wanted  # for now only: it comes again with a later session
    assert (await mesh.admission.store_from_peer(note(ME, 1), None, "sync")).new  # known authors are never held
    assert (await mesh.admission.store_from_peer(note(others[4], 2), None, "gossip")).new  # gossip has its own rate


async def test_a_container_the_store_fails_on_is_counted_and_the_gossip_reader_goes_on(mesh):
    broken, fine = note(STRANGER, 0), note(STRANGER, 1)
    write = mesh.store.write

    async def failing_write(fn, arg, **kw):  # admit (one container) or admit_many (the batch, which then fails)
        if broken.did in ([c.did for c, _, _ in arg] if isinstance(arg, list) else [arg.did]):
            raise ContainerError("too_many_items", "more than 16384 items")
        return await write(fn, arg, **kw)

    async def arrivals(subscription):
        yield [broken, fine]  # one batch: stored one at a time once the batch's write failed

    mesh.store.write, mesh.container_gossip._batches_from_others = failing_write, arrivals
    await mesh.container_gossip.read(None)  # raised ContainerError out of the reader (and the node)
    assert count(mesh.metrics, "containers_not_stored", reason="too_many_items", via="gossip") == 1
    held = await mesh.store.read(lambda db: db.get_container_bytes(fine.did))
    assert held is not None and await mesh.store.read(lambda db: db.get_container_bytes(broken.did)) is None


async def test_refused_and_evicted_containers_are_not_fetched_or_taken_again(mesh):
    mesh.admission.quotas = Quotas(author_containers=2, author_bytes=10**6, total_containers=3, total_bytes=10**9,
                                slack=0)
    sent = [note(STRANGER, i) for i in range(3)] + [note(FRIEND, 0), note(FRIEND, 1)]
    ticks = itertools.count(T0)
    mesh.admission.clock = lambda: next(ticks)  # received in order: the oldest stranger's note is evicted first
    results = [await mesh.admission.store_from_peer(c, "did:key:zrelay", "sync") for c in sent]
    assert [r.outcome for r in results] == ["new", "new", "refused", "new", "new"]
    refused, evicted = sent[2], sent[0]
    assert results[4].gone == ((evicted.did, STRANGER.did),)
    assert refused.did in mesh.admission.not_wanted and evicted.did in mesh.admission.not_wanted
    writes = []
    write = mesh.store.write

    async def counted_write(fn, *args, **kw):
        writes.append(fn)
        return await write(fn, *args, **kw)

    mesh.store.write = counted_write
    again = await mesh.admission.store_from_peer(evicted, "did:key:zrelay", "push")
    assert (again.outcome, again.reason, writes) == ("refused", "refused_before", [])

    fetched = []

    async def fetch(did, dids):
        fetched.extend(dids)
        return []

    mesh.exchange.fetch = fetch
    lacked = {_digest(c.did) for c in (refused, evicted)} | {_digest(note(STRANGER, 7).did)}
    session = SimpleNamespace(push=set(), fetch=lacked, rounds=1, passes=1, restarts=0)
    await mesh.sync._settle("did:key:zfriend", session, {})
    assert fetched == [note(STRANGER, 7).did]  # what sync lacks, less what was refused or evicted
    assert count(mesh.metrics, "sync_not_fetched", reason="refused_before") == 2

    await mesh.store.write(set_friend, STRANGER.did, "p", T0)
    await mesh.refresh_known()  # a friend now: no quota, nothing remembered against it
    assert len(mesh.admission.not_wanted) == 0 and (await mesh.admission.store_from_peer(evicted, None, "gossip")).new


async def test_a_push_the_peer_refused_over_quota_is_not_pushed_to_it_again(mesh):
    mine = [note(STRANGER, i) for i in range(3)]
    for c in mine:
        await mesh.store.write(lambda db, c=c: db.put_container(c, received_at_ms=T0))
    pushes = []

    async def push(did, batch):
        pushes.append([c.did for c in batch])
        return {"op": "ack", "accepted": [batch[0].did], "duplicates": [],
                "rejected": [{"index": i, "code": "quota", "reason": "full"} for i in range(1, len(batch))]}

    mesh.exchange.push = push
    by_digest = {_digest(c.did): c.did for c in mine}
    for _ in range(2):
        await mesh.sync._settle("did:key:zpeer", SimpleNamespace(push=set(by_digest), fetch=set(), rounds=1, passes=1,
                                                                 restarts=0), by_digest)
    assert len(pushes[0]) == 3 and len(pushes[1]) == 1  # the two refused ones are not sent again
    await mesh.sync._settle("did:key:zother", SimpleNamespace(push=set(by_digest), fetch=set(), rounds=1, passes=1,
                                                              restarts=0), by_digest)
    assert len(pushes[2]) == 3  # another peer's quota is its own


async def test_sync_leaves_its_other_pushes_for_the_next_session_when_the_peer_says_when(mesh):
    from meshnode.net.mesh_sync import BATCH

    mine = [note(NodeKey.generate(), i) for i in range(BATCH + 3)]
    for c in mine:
        await mesh.store.write(lambda db, c=c: db.put_container(c, received_at_ms=T0))
    pushes, fetched = [], []

    async def push(did, batch):
        pushes.append(len(batch))
        return {"op": "ack", "accepted": [], "duplicates": [], "retry_ms": 1000,
                "rejected": [{"index": i, "code": "busy", "reason": "later"} for i in range(len(batch))]}

    async def fetch(did, dids):
        fetched.extend(dids)
        return []

    mesh.exchange.push, mesh.exchange.fetch = push, fetch
    by_digest = {_digest(c.did): c.did for c in mine}
    lacked = {_digest(note(STRANGER, 9).did)}
    await mesh.sync._settle("did:key:zpeer", SimpleNamespace(push=set(by_digest), fetch=lacked, rounds=1, passes=1,
                                                             restarts=0), by_digest)
    assert pushes == [BATCH]  # the peer asked to wait: the second batch would only count against us
    assert count(mesh.metrics, "sync_push_deferred") == 3
    assert fetched == [note(STRANGER, 9).did]  # what it has for us is still fetched


async def test_gossip_rate_applies_to_unknown_authors_only_and_pardons_copies(mesh):
    mesh.parts.pubsub = SimpleNamespace(_msg_id_constructor=lambda m: m.data[:4])
    message = SimpleNamespace(data=b"abcdefgh")
    assert [mesh.admission.admit_gossip_author(note(STRANGER, i), message) for i in range(3)] == [True, True, False]
    assert count(mesh.metrics, "gossip_ignored", reason="unknown_author_rate") == 1
    assert mesh.admission.gossip_pardoned(b"abcd") and not mesh.admission.gossip_pardoned(b"wxyz")
    assert all(mesh.admission.admit_gossip_author(note(COMMITTEE, i)) for i in range(10))


async def test_pardoned_gossip_is_not_counted_as_invalid_again():
    refused = []

    class FakePubsub:
        host = SimpleNamespace(get_id=lambda: "me")
        strict_signing = False
        validation_cache = SimpleNamespace(get=lambda msg_id: SimpleNamespace(is_valid=False))

        @staticmethod
        def _is_msg_seen(msg):
            return False

        @staticmethod
        def _msg_id_constructor(msg):
            return msg

        async def push_msg(self, forwarder, msg):
            return None

    pubsub = FakePubsub()
    libp2p_fixes.count_gossip_refused_unseen(pubsub, lambda f, code: refused.append((f, code)),
                                             pardoned=lambda msg_id: msg_id == b"pardoned")
    await pubsub.push_msg("relay", b"pardoned")
    assert refused == []
    await pubsub.push_msg("relay", b"bad")
    assert refused == [("relay", "invalid_again")]


async def test_strangers_are_forgotten_in_memory(mesh):
    mesh.liveness.heard(STRANGER.did, T0 - 10_000, seq=1, sent_ms=T0 - 10_000)
    mesh.liveness.heard(COMMITTEE.did, T0 - 10_000, seq=1, sent_ms=T0 - 10_000)
    mesh.liveness.tick(T0)
    assert mesh.liveness.state(STRANGER.did) is Liveness.DEAD
    mesh.discovery._looked_up = {"old": T0 - ANNOUNCE_RECHECK_MS - 1, "recent": T0 - 1000}
    mesh.sync._synced_at = {STRANGER.did: 1.0, COMMITTEE.did: 1.0}
    mesh.admission._forget_strangers()
    assert mesh.liveness.state(STRANGER.did) is None
    assert mesh.liveness.state(COMMITTEE.did) is Liveness.DEAD  # known: kept
    assert set(mesh.discovery._looked_up) == {"recent"}
    assert set(mesh.sync._synced_at) == {COMMITTEE.did}


def test_not_wanted_is_bounded_and_forgets_authors_who_became_known():
    table = NotWanted(limit=3)
    for i in range(5):
        table.add(f"c{i}", "did:key:za" if i % 2 else "did:key:zb")
    assert len(table) == 3 and "c1" not in table and "c4" in table  # the oldest forgotten first
    table.add("c2", "did:key:zb")  # seen again: kept longest
    table.add("c5", "did:key:za")
    assert "c2" in table and "c3" not in table
    table.forget_authors({"did:key:zb"})
    assert "c2" not in table and "c4" not in table and "c5" in table


@pytest.fixture
async def ticking(tmp_path):
    """A Mesh at the default limits whose clock the test moves (``mesh.now[0]``), FRIEND a friend."""
    now = [T0]
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="t", committee_dids=[COMMITTEE.did],
                       thresholds=Thresholds(1000, 2000, 3000))
    async with await Store.open(tmp_path / "node.db") as store:
        mesh = Mesh(ME, config, store, Metrics(), clock=lambda: now[0])
        mesh.now = now
        await mesh.store.write(set_friend, FRIEND.did, "p", T0)
        await mesh.refresh_known()
        yield mesh


def swarm():
    """A Sybil swarm: a fresh identity for every container."""
    while True:
        yield note(NodeKey.generate(), 0)


async def test_one_write_rate_for_all_strangers_across_push_sync_fetch_and_gossip(ticking):
    a, junk = ticking.admission, swarm()
    assert all(a.stranger_writes.take(T0) for _ in range(6))  # 4 of the burst of 10 left
    outcomes = [(await a.store_from_peer(next(junk), "did:key:zsybil", via)).outcome for via in ("push", "sync", "fetch")]
    assert outcomes == ["new", "new", "new"]
    assert a.admit_gossip_author(next(junk))  # the last token, by gossip
    assert [(await a.store_from_peer(next(junk), "did:key:zsybil", via)).outcome for via in ("push", "fetch")] == \
        ["busy", "busy"]
    assert not a.admit_gossip_author(next(junk))  # gossip is over the same rate
    assert count(ticking.metrics, "gossip_ignored", reason="stranger_rate") == 1
    assert count(ticking.metrics, "containers_refused", reason="stranger_rate") == 2
    assert count(ticking.metrics, "pool_admitted") == 3
    # never limited: a known author, a stranger's container a known peer sends or forwards (not pooled)
    assert (await a.store_from_peer(note(FRIEND, 1), FRIEND.did, "push")).new
    sent = await a.store_from_peer(next(junk), FRIEND.did, "sync")
    assert sent.new and not sent.pooled
    forwarded = next(junk)
    assert a.admit_gossip_author(forwarded, forwarder=FRIEND.did)
    stored = (await a.store_many_from_peers([(forwarded, forwarded.sender_did)], "gossip"))[0]
    assert stored.new and not stored.pooled
    ticking.now[0] += 1000  # a second later: one more stranger's container, whichever way
    assert (await a.store_from_peer(next(junk), "did:key:zsybil", "sync")).new
    assert (await a.store_from_peer(next(junk), "did:key:zsybil", "push")).outcome == "busy"


async def test_a_sybil_swarm_stores_at_most_70_containers_a_minute_at_the_defaults(ticking):
    """Issue 36's goal, at most 100 strangers' containers a minute: 10 (the burst) + 60 (1/s)."""
    a, junk = ticking.admission, swarm()
    stored = 0
    for tick in range(600):  # a push and a gossiped container from fresh keys every 100 ms, for a minute
        ticking.now[0] = T0 + 100 * tick
        stored += (await a.store_from_peer(next(junk), "did:key:zsybil", "push")).new
        gossiped = next(junk)
        if a.admit_gossip_author(gossiped):
            stored += (await a.store_many_from_peers([(gossiped, gossiped.sender_did)], "gossip"))[0].new
    assert 60 <= stored <= 70, stored
