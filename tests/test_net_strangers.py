"""Strangers share one budget (issue 36 item 2), sans-IO: the shared CPU bucket, known peers first in the
worker pool, the strangers' connections and streams at once, and the rate of new identities."""

from __future__ import annotations

import random

import pytest

from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.addresses import AddressGuard
from meshnode.net.budget import BudgetLimits, CpuBudgets, OverBudget
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_gating import Gating
from meshnode.net.offload import FairQueue
from meshnode.net.peer_guard import PeerGuard
from meshnode.net.standing import Standing
from meshnode.net.strangers import StrangerGate, StrangerLimits
from meshnode.store.known import KnownAuthors

T0 = 1_700_000_000_000


# --- the shared CPU budget ------------------------------------------------------------

def test_a_thousand_strangers_over_many_subnets_cannot_spend_more_than_their_shared_share():
    """1,000 identities, each from its own address, over 250 /24s, each asking for 5 ms of work as often
    as it may, for 20 s: each of their own budgets (2,000 ms burst) and each address's and subnet's
    would let them spend ~2,000 s of CPU; all of them together get the strangers' burst and rate."""
    limits = BudgetLimits()
    budgets = CpuBudgets(limits)
    strangers = [(f"sybil{i}", f"10.{i // 250}.{i % 250}.{i % 4 + 1}") for i in range(1000)]
    rng = random.Random(36)
    spent, seconds = 0.0, 20
    for step in range(seconds * 10):  # every 100 ms, 100 of them ask at random
        now = T0 + step * 100
        for did, host in rng.sample(strangers, 100):
            try:
                charge = budgets.admit(did, host, False, 5.0, now)
            except OverBudget as exc:
                assert exc.key in ("strangers", f"peer:{did}")
                continue
            budgets.settle(charge, 5.0, now)
            spent += 5.0
    assert spent <= limits.strangers_burst_ms + limits.strangers_ms_per_second * seconds + 5.0
    assert spent >= limits.strangers_ms_per_second * seconds  # and they do get their share
    now = T0 + seconds * 1000
    with pytest.raises(OverBudget) as refused:  # a fresh identity on a fresh subnet: held to the shared budget
        budgets.admit("fresh", "198.51.100.7", False, 50.0, now)  # 15 ms refilled since the last step
    assert refused.value.key == "strangers"
    budgets.admit("friend", "10.0.0.1", True, 1000.0, now)  # a known peer: its own budget, never the shared one
    assert budgets.strangers_spent(now) >= limits.strangers_burst_ms - 50.0  # nor did the friend pay into it


def test_the_shared_budget_does_not_make_every_stranger_look_as_costly():
    budgets = CpuBudgets(BudgetLimits(strangers_burst_ms=1000))
    budgets.admit("hog", "10.0.0.1", False, 900, T0)
    budgets.admit("thrifty", "10.9.0.1", False, 1, T0)
    assert budgets.pressure("thrifty", T0) < 0.01 < budgets.pressure("hog", T0)


# --- known peers first in the worker pool ----------------------------------------------

def test_known_peers_jobs_are_served_before_strangers_and_never_refused_for_them():
    known = {"friend", "friend2"}
    cost = {"friend": 0.9, "friend2": 0.9, "cheap": 0.0, "hog": 0.5}  # the friends spent more of their (larger) budgets
    q = FairQueue(workers=1, max_waiting=2, cost_of=cost.get, is_known=known.__contains__)
    running, _ = q.submit("hog")
    cheap, _ = q.submit("cheap")
    friend, _ = q.submit("friend")
    assert q.done(running) is friend  # before the thrifty stranger who came first
    hog, _ = q.submit("hog")
    friend2, refused = q.submit("friend2")  # full (cheap, hog waiting): a stranger's job makes room
    assert refused is hog and not friend2.refused
    stranger, refused = q.submit("cheap")  # full of a stranger and a friend: the stranger's, not the friend's
    assert refused in (stranger, cheap) and not friend2.refused
    assert q.done(friend) is friend2


# --- connections and new identities, at the gate -----------------------------------------

class Conn:
    """What the gate reads of a libp2p connection: who, and which side dialled."""

    def __init__(self, did: str, inbound: bool = True):
        from libp2p.peer.id import ID

        from meshnode.base.identity.did import did_to_peer_id

        self.did = did
        self.muxed_conn = type("Muxed", (), {})()
        self.muxed_conn.peer_id = ID.from_base58(did_to_peer_id(did))
        self.muxed_conn.secured_conn = type("Secured", (), {"is_initiator": not inbound})()


class Nursery:
    def __init__(self):
        self.closed = []

    def start_soon(self, fn, *args):
        self.closed.append(args[0] if args else None)


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self) -> int:
        return self.now


def gate_with(limits: StrangerLimits, known=()):
    clock, metrics, standing = Clock(), Metrics(), Standing()
    budgets = CpuBudgets()
    guard = PeerGuard(Libp2pParts(), standing, budgets, AddressGuard(), None, KnownAuthors(known), None, metrics,
                      clock, strangers=StrangerGate(limits))
    gate = Gating(Libp2pParts(), None, guard, standing, AddressGuard(), PeerEvents(), metrics, clock,
                  strangers=guard.strangers)
    return gate, guard, clock


def a_did() -> str:
    return NodeKey.generate().did


def admitted(gate: Gating, conn: Conn, nursery: Nursery) -> bool:
    return gate._admit_stranger(conn, conn.did, nursery)


def test_strangers_connections_are_capped_known_peers_still_find_room_and_an_idle_one_gives_way():
    friend = a_did()
    gate, guard, clock = gate_with(StrangerLimits(max_connections=3, idle_evict_ms=30_000), known=[friend])
    nursery = Nursery()
    first = [Conn(a_did()) for _ in range(3)]
    assert all(admitted(gate, c, nursery) for c in first)
    late = Conn(a_did())
    assert not admitted(gate, late, nursery) and nursery.closed == [late]  # full, no one idle or costly
    assert gate.metrics.get("connections_refused", reason="strangers_full", stage="connect") == 1
    assert admitted(gate, Conn(friend), nursery)  # a known peer is not counted, nor refused
    assert admitted(gate, Conn(a_did(), inbound=False), nursery)  # nor our own dial
    clock.now += 20_000
    guard.strangers.touch(first[0].did, clock.now)  # it works: not idle
    clock.now += 15_000  # the two others idle 35 s
    newcomer = Conn(a_did())
    assert admitted(gate, newcomer, nursery)
    assert nursery.closed[-1] in first[1:] and gate.metrics.get("strangers_evicted") == 1
    assert guard.strangers.connected == 3


def test_the_costliest_stranger_gives_way_to_a_cheaper_newcomer():
    gate, guard, clock = gate_with(StrangerLimits(max_connections=2))
    nursery = Nursery()
    hog, thrifty = Conn(a_did()), Conn(a_did())
    assert admitted(gate, hog, nursery) and admitted(gate, thrifty, nursery)
    guard.budgets.admit(hog.did, "10.0.0.1", False, 1500, clock.now)  # spent most of its budget
    assert admitted(gate, Conn(a_did()), nursery)
    assert nursery.closed == [hog]


def test_new_identities_are_admitted_at_a_bounded_rate_and_remembered_ones_come_back():
    gate, guard, clock = gate_with(StrangerLimits(new_per_second=1.0, new_burst=3))
    nursery = Nursery()
    first = [Conn(a_did()) for _ in range(3)]
    assert all(admitted(gate, c, nursery) for c in first)  # the burst, whatever their addresses
    assert not admitted(gate, Conn(a_did()), nursery)
    assert gate.metrics.get("connections_refused", reason="new_identity_rate", stage="connect") == 1
    assert admitted(gate, Conn(first[0].did), nursery)  # admitted before: not a newcomer
    with_standing = a_did()
    guard.standing.record_valid(with_standing, clock.now)
    assert admitted(gate, Conn(with_standing), nursery)  # it sent valid input: it has standing
    clock.now += 1000
    assert admitted(gate, Conn(a_did()), nursery)  # one more a second
    assert not admitted(gate, Conn(a_did()), nursery)


def test_a_gate_remembers_and_is_bounded():
    gate = StrangerGate(StrangerLimits(new_per_second=1.0, new_burst=1, remembered=10))
    gate.remember("old")
    assert gate.admit_identity("old", T0) and gate.admit_identity("new", T0) and not gate.admit_identity("x", T0)
    for i in range(100):
        gate.remember(f"p{i}")
    assert len(gate._remembered) <= 10


# --- streams opened, before their protocol is negotiated ----------------------------------

class Stream:
    """What the stream gate reads of an inbound libp2p stream: its connection; and whether it was reset."""

    def __init__(self, conn):
        self.swarm_conn, self.was_reset = conn, False

    async def reset(self):
        self.was_reset = True


class Network:
    def __init__(self):
        self.handled = []

        async def handle(stream):
            self.handled.append(stream)
        self.common_stream_handler = handle


def test_a_strangers_stream_opens_are_rated_per_connection_before_multistream():
    import trio

    from meshnode.net.mesh_gating import _refuse_fast_stream_opens

    friend = a_did()
    gate, guard, clock = gate_with(StrangerLimits(stream_opens_per_second=4.0, stream_opens_burst=8,
                                                  all_stream_opens_burst=1000), known=[friend])
    nursery, network = Nursery(), Network()
    _refuse_fast_stream_opens(gate, network)
    stranger, other, known, ours = Conn(a_did()), Conn(a_did()), Conn(friend), Conn(a_did(), inbound=False)
    assert all(admitted(gate, c, nursery) for c in (stranger, other, known, ours))

    async def open_streams(conn, n: int) -> list[Stream]:
        streams = [Stream(conn) for _ in range(n)]
        for stream in streams:
            await network.common_stream_handler(stream)
        return streams

    async def main():
        flood = await open_streams(stranger, 20)
        assert [s.was_reset for s in flood] == [False] * 8 + [True] * 12  # the burst, then reset unnegotiated
        assert gate.metrics.get("stream_refused", protocol="unnegotiated", reason="open_rate") == 12
        assert not any(s.was_reset for s in await open_streams(other, 8))  # per connection: another has its own
        assert not any(s.was_reset for s in await open_streams(known, 50))  # a known peer's: not rated
        assert not any(s.was_reset for s in await open_streams(ours, 50))  # nor our own dial's
        clock.now += 500
        assert [s.was_reset for s in await open_streams(stranger, 3)] == [False, False, True]  # 4 a second
    trio.run(main)
    assert len(network.handled) == 8 + 8 + 50 + 50 + 2


def test_all_strangers_stream_opens_share_one_rate_but_a_newcomers_first_ones_pass():
    gate = StrangerGate(StrangerLimits(stream_opens_burst=100, all_stream_opens_per_second=10.0,
                                       all_stream_opens_burst=20, free_stream_opens=3))
    swarm = [f"conn{i}" for i in range(50)]
    for i, conn in enumerate(swarm):
        assert gate.connect(conn, f"sybil{i}", T0)[0]
    admitted = sum(gate.admit_stream_open(conn, T0 + step * 100) for step in range(100) for conn in swarm[:10])
    # 10 s: the burst, 10 a second, and the first 3 of each of the 10 connections
    assert 20 + 10 * 10 <= admitted <= 20 + 10 * 10 + 10 * 3 + 1
    now = T0 + 10_000
    assert sum(gate.admit_stream_open(swarm[0], now) for _ in range(5)) <= 1  # the shared rate is spent
    assert gate.connect("newcomer", "honest", now)[0]
    assert all(gate.admit_stream_open("newcomer", now) for _ in range(3))  # its first streams pass
    assert not gate.admit_stream_open("newcomer", now)
    assert gate.admit_stream_open("not a stranger's", now)  # a connection not counted here: never rated


# --- streams of all strangers ----------------------------------------------------------

def test_streams_of_all_strangers_are_bounded_whatever_their_addresses():
    friend = a_did()
    _, guard, _ = gate_with(StrangerLimits(max_streams=2), known=[friend])
    assert guard.begin_stream("a", "10.0.0.1") is None
    assert guard.begin_stream("b", "10.1.0.1") is None
    assert guard.begin_stream("c", "10.2.0.1") == "strangers_busy"
    assert guard.begin_stream(friend, None) is None  # a known peer is not counted
    guard.end_stream("a", "10.0.0.1")
    guard.end_stream(friend, None)  # never counted: nothing freed
    assert guard.begin_stream("c", "10.2.0.1") is None
    assert guard.begin_stream("d", "10.3.0.1") == "strangers_busy"


def test_handshakes_from_unknown_addresses_are_rated_before_they_are_paid_for():
    gate = StrangerGate(StrangerLimits(handshakes_per_second=4.0, handshakes_burst=16))
    admitted = sum(gate.admit_handshake(1_000_000 + i * 10) for i in range(1000))  # 100 a second for 10 s
    assert 16 <= admitted <= 16 + 4 * 10 + 1
    while gate.admit_handshake(1_000_000 + 10_000):
        pass
    assert not gate.admit_handshake(1_000_000 + 10_100)
    assert gate.admit_handshake(1_000_000 + 10_250)  # one more a quarter second later
