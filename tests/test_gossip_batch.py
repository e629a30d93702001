"""Gossip stored a batch per write transaction (store.admit_batch, mesh_admission._store_many_from_peers)
and each container's stages timed (net.gossip_timing), issue 18."""

from __future__ import annotations

import pytest

from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.gossip_timing import GossipTiming
from meshnode.net.liveness import Thresholds
from meshnode.net.mesh import Mesh, NetConfig
from meshnode.domain.notes import make_note
from meshnode.store import Store
from meshnode.store.admit_batch import admit_many
from meshnode.store.quotas import Quotas

T0 = 1_760_000_000_000
ME, STRANGER = NodeKey(bytes([21]) * 32), NodeKey(bytes([22]) * 32)


@pytest.fixture
async def mesh(tmp_path):
    config = NetConfig(listen=[], announce=[], bootstrap=[], name="t", thresholds=Thresholds(1000, 2000, 3000),
                       quotas=Quotas(author_containers=3, author_bytes=10**6, total_containers=100,
                                     total_bytes=10**9))
    async with await Store.open(tmp_path / "node.db") as store:
        yield Mesh(ME, config, store, Metrics(), clock=lambda: T0)


def note(i: int):
    return make_note(STRANGER, f"n{i}", now_ms=T0 + i, audience="public")


def count_writes(mesh) -> list:
    """The functions the mesh's store writes run, in order (the store still writes)."""
    writes, write = [], mesh.store.write

    async def counted(fn, *args, **kw):
        writes.append(fn)
        return await write(fn, *args, **kw)

    mesh.store.write = counted
    return writes


async def held(mesh, c) -> bool:
    return await mesh.store.read(lambda db: db.get_container_bytes(c.did)) is not None


async def test_a_batch_is_one_write_and_each_container_gets_its_own_outcome(mesh):
    writes = count_writes(mesh)
    sent = [note(i) for i in range(4)]
    results = await mesh.admission.store_many_from_peers([(c, "did:key:zrelay") for c in [*sent, sent[0]]], "gossip")
    assert writes == [admit_many]
    # the author quota (3) refuses the fourth; the copy of the first is a duplicate
    assert [r.outcome for r in results] == ["new", "new", "new", "refused", "duplicate"]
    assert mesh.metrics.get("containers_refused", reason="author_quota", via="gossip") == 1
    assert [await held(mesh, c) for c in sent] == [True, True, True, False]
    assert sent[3].did in mesh.admission.not_wanted


async def test_one_failing_container_rolls_back_alone(mesh, monkeypatch):
    import meshnode.store.quotas as quotas

    sent = [note(i) for i in range(3)]
    insert = quotas._insert

    def failing(conn, c, *args):
        stored = insert(conn, c, *args)  # written, then the failure: its savepoint must undo it
        if c.did == sent[1].did:
            raise RuntimeError("disk trouble for this one")
        return stored

    monkeypatch.setattr(quotas, "_insert", failing)
    results = await mesh.admission.store_many_from_peers([(c, None) for c in sent], "gossip")
    assert [r.outcome for r in results] == ["new", "failed", "new"]
    assert [await held(mesh, c) for c in sent] == [True, False, True]
    usage = await mesh.store.read(lambda db: db.conn.execute(
        "SELECT containers FROM author_usage WHERE author = ?", (STRANGER.did,)).fetchone())
    assert usage == (2,)  # the rolled-back one left nothing behind, not even in the triggers' counts


def test_stages_are_timed_from_the_previous_one_and_kept_bounded():
    metrics = Metrics()
    timing = GossipTiming(metrics, kept=2)
    timing.mark("a", "arrived", 1_100, 1_000)
    timing.mark("a", "validated", 1_130, 1_000)
    timing.mark("a", "validated", 1_500, 1_000)  # a later copy: the first mark stays
    timing.mark("a", "stored", 1_180, 1_000)  # no "read" mark: from the last one there is
    assert timing.of("a") == {"arrived": 1_100, "validated": 1_130, "stored": 1_180}
    sums = {h["labels"]["stage"]: round(h["sum"], 3) for h in metrics.histograms()}
    assert sums == {"arrived": 0.1, "validated": 0.03, "stored": 0.05}
    timing.mark("b", "arrived", 1, 0)
    timing.mark("c", "arrived", 1, 0)
    assert timing.of("a") == {} and timing.of("c") == {"arrived": 1}


async def test_the_reader_stores_what_arrived_meanwhile_in_one_write(mesh):
    """Three validated messages waiting in the subscription: one batch, one write, each delivered."""
    import trio

    from test_mesh_cost import Message, peer

    mesh.container_gossip.clock = now_ms  # the validator checks the time
    sent = [make_note(STRANGER, f"n{i}", now_ms=mesh.clock(), audience="public") for i in range(3)]
    send, receive = trio.open_memory_channel(8)
    for i, c in enumerate(sent):
        message = Message(c.to_bytes(), peer(STRANGER).to_bytes(), seqno=bytes([i]) * 8)
        assert await mesh.container_gossip.validate_container(peer(STRANGER), message)
        send.send_nowait(message)

    class Subscription:
        receive_channel = receive
        get = receive.receive

    writes = count_writes(mesh)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(mesh.container_gossip.read, Subscription())
        with trio.fail_after(10):  # the reader then waits for more: stop it once the three are in
            while mesh.metrics.get("gossip_delivered") < 3:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert writes == [admit_many] and mesh.metrics.get("gossip_delivered", cls="note") == 3
    assert all("stored" in mesh.timing.of(c.did) for c in sent)


async def test_a_batch_whose_transaction_sqlite_rolled_back_is_not_committed_piecemeal(mesh, monkeypatch):
    """SQLite rolls the whole transaction back itself on some errors (disk full, I/O). The batch went on:
    the next container's SAVEPOINT began a transaction of its own and its RELEASE committed it, then
    the batch's COMMIT failed and the one-at-a-time retry found that container "duplicate": stored,
    but never counted delivered nor told to the reactor. The batch must fail as a whole instead."""
    import sqlite3

    import meshnode.store.quotas as quotas

    sent = [note(i) for i in range(3)]
    insert, failed = quotas._insert, []

    def disk_full_once(conn, c, *args):
        if c.did == sent[1].did and not failed:
            failed.append(c.did)
            conn.execute("ROLLBACK")  # what SQLite does on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")
        return insert(conn, c, *args)

    monkeypatch.setattr(quotas, "_insert", disk_full_once)
    results = await mesh.admission.store_many_from_peers([(c, None) for c in sent], "gossip")
    assert failed and [r.outcome for r in results] == ["new", "new", "new"]
    assert [await held(mesh, c) for c in sent] == [True, True, True]
