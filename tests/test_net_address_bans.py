"""Bans that spare the innocent (sans-IO, time passed in): what identities do bans those identities,
never their address; an address is banned for handshake-level abuse only (connections over the rate,
failed or unfinished handshakes, connections that end without a stream), the ban lifts
``ban_ms`` after the flood stops, and a banned identity is refused from any address."""

from __future__ import annotations

import trio

from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.addresses import AddressGuard, AddressLimits
from meshnode.net.budget import CpuBudgets
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_gating import Gating
from meshnode.net.peer_guard import PeerGuard
from meshnode.net.standing import PeerLimits, Standing

T0 = 1_700_000_000_000
NAT = "203.0.113.7"


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self) -> int:
        return self.now


class Store:
    """The store as the gate and the guard use it: bans written, the bans of an earlier run read."""

    def __init__(self, bans: dict[str, int] | None = None):
        self.bans, self.writes = bans or {}, 0

    async def read(self, fn, *args):
        if fn.__name__ == "list_peers":  # the peers an earlier run met (none here)
            return []
        return dict(self.bans)

    async def write(self, fn, *args):
        self.writes += 1


class Network:
    def __init__(self):
        self.notifees = []
        self.common_stream_handler = None  # py-libp2p's swarm has one; the gate wraps it

    def get_connections(self, peer_id):
        return []

    def get_connected_peers(self):
        return []

    def register_notifee(self, notifee):
        self.notifees.append(notifee)

    async def dial_peer(self, peer_id):
        raise AssertionError("no dials here")


class Host:
    def __init__(self):
        self.network = Network()

    def get_network(self):
        return self.network

    def get_connected_peers(self):
        return []


class Secured:
    is_initiator = False  # the peer dialled us


class Muxed:
    def __init__(self, did: str, address: tuple):
        from libp2p.peer.id import ID

        self.peer_id = ID.from_base58(did_to_peer_id(did))
        self.secured_conn, self.address, self.is_closed = Secured(), address, False

    def get_remote_address(self):
        return self.address


class Conn:
    def __init__(self, did: str, address: tuple):
        self.muxed_conn = Muxed(did, address)

    async def close(self):
        self.muxed_conn.is_closed = True


class Stream:
    def __init__(self, conn: Conn, by_peer: bool):
        self.muxed_conn = conn.muxed_conn
        self.muxed_stream = type("MuxedStream", (), {"is_initiator": not by_peer})()


def node(limits: AddressLimits = AddressLimits(), peer_limits: PeerLimits = PeerLimits(), store=None):
    """A PeerGuard and a Gating over one address guard, as the Mesh wires them, on a fake host."""
    clock, metrics, standing = Clock(), Metrics(), Standing(peer_limits)
    addresses, parts, store = AddressGuard(limits), Libp2pParts(host=Host()), store or Store()
    guard = PeerGuard(parts, standing, CpuBudgets(), addresses, None, set(), store, metrics, clock)
    guard.host_of = lambda did: NAT  # every identity here connects from the same NAT
    gate = Gating(parts, store, guard, standing, addresses, PeerEvents(), metrics, clock)

    async def identified_later(conn, did, nursery):
        pass

    gate._check_once_identified = identified_later
    return gate, guard, clock, metrics


def a_did() -> str:
    return NodeKey.generate().did


async def connect(gate: Gating, did: str, address: tuple) -> Conn:
    """An inbound connection from ``address`` as the swarm makes it: checked at accept, then at connect."""
    conn = Conn(did, address)
    if gate.admit_at_accept(address) is not None:
        conn.muxed_conn.is_closed = True
        return conn
    async with trio.open_nursery() as nursery:
        gate._on_connected(conn, nursery)
    return conn


async def test_identities_cut_off_at_one_address_are_banned_but_the_address_is_not():
    gate, guard, clock, metrics = node(peer_limits=PeerLimits(invalid_threshold=1))
    for i in range(100):  # a hundred identities behind one NAT, each cut off for junk
        did = a_did()
        conn = await connect(gate, did, (NAT, 5000 + i))
        assert not conn.muxed_conn.is_closed
        guard.invalid(did, "bad_message", nbytes=1 << 20)
        assert guard.banned(did)
        clock.now += 1000  # within the connection rate
    assert metrics.get("bans", kind="identity") == 100
    assert metrics.get("bans", kind="address") == 0
    newcomer = await connect(gate, a_did(), (NAT, 6000))  # an honest newcomer behind the same NAT
    assert not newcomer.muxed_conn.is_closed
    assert metrics.get("connections_refused", reason="address_banned", stage="accept") == 0


async def test_failed_handshakes_ban_the_address_and_no_one_else():
    gate, _, clock, metrics = node(AddressLimits(abuse_to_ban=10))
    for _ in range(9):
        gate.failed_handshake(NAT)
        clock.now += 1000
    assert gate.admit_at_accept((NAT, 5000)) is None  # nine in ten seconds: not yet
    gate.failed_handshake(NAT)
    assert gate.admit_at_accept((NAT, 5001)) == "address_banned"
    assert gate.admit_at_accept(("198.51.100.1", 5000)) is None  # another address
    assert metrics.get("address_abuse", kind="handshake") == 10
    assert metrics.get("bans", kind="address", why="handshake") == 1


def test_strikes_spread_wider_than_the_window_do_not_ban():
    guard = AddressGuard(AddressLimits(abuse_to_ban=10, abuse_window_ms=60_000))
    assert not any(guard.strike(NAT, "handshake", T0 + i * 7000) for i in range(30))  # one per 7 s
    assert guard.allow_connection(NAT, T0 + 210_000) is None


async def test_connections_far_over_the_rate_ban_the_address():
    gate, _, clock, metrics = node(AddressLimits(connections_per_minute=6, abuse_to_ban=5))
    refusals = [gate.admit_at_accept((NAT, 5000 + i)) for i in range(14)]
    assert refusals == [None] * 6 + ["rate"] * 5 + ["address_banned"] * 3
    assert metrics.get("bans", kind="address", why="rate") == 1


async def test_connections_that_end_without_a_stream_ban_the_address():
    gate, _, clock, metrics = node(AddressLimits(abuse_to_ban=5))
    for i in range(4):  # honest peers: each opens a stream (identify, pubsub) before it leaves
        conn = await connect(gate, a_did(), (NAT, 5000 + i))
        gate._on_stream(Stream(conn, by_peer=False))  # ours do not count
        gate._on_stream(Stream(conn, by_peer=True))
        gate._on_disconnected(conn)
    for i in range(4):  # connect and leave
        gate._on_disconnected(await connect(gate, a_did(), (NAT, 5100 + i)))
    assert gate.admit_at_accept((NAT, 5200)) is None
    gate._on_disconnected(await connect(gate, a_did(), (NAT, 5201)))
    assert metrics.get("address_abuse", kind="no_stream") == 5
    assert gate.admit_at_accept((NAT, 5202)) == "address_banned"


def test_the_address_ban_lifts_within_ban_ms_after_the_flood_stops():
    """The flood: 100 connections a second for two minutes; the ban (30 s) is renewed all along, and
    lifts 30 s after the last attempt: an honest newcomer retrying every 5 s meanwhile does not renew it."""
    limits = AddressLimits()
    guard, now = AddressGuard(limits), T0
    verdicts = []
    while now < T0 + 120_000:
        verdicts.append(guard.allow_connection(NAT, now))
        now += 10
    assert verdicts[:60] == [None] * 60  # the burst
    assert verdicts[60:90] == ["rate"] * 30  # 30 strikes: banned
    assert set(verdicts[90:]) == {"address_banned"}  # for 1.5 minutes: renewed while the flood goes on
    stopped = now - 10
    assert guard.banned_until(NAT) == stopped + limits.ban_ms
    newcomer = []
    for t in range(stopped + 5000, stopped + 40_000, 5000):
        newcomer.append((t - stopped, guard.allow_connection(NAT, t)))
    assert newcomer[:5] == [(s, "address_banned") for s in (5000, 10_000, 15_000, 20_000, 25_000)]
    assert newcomer[5:] == [(30_000, None), (35_000, None)]  # in at 30 s after the flood stopped


def test_an_honest_peer_retrying_twice_a_second_during_the_ban_does_not_renew_it():
    """py-libp2p dials again at once after a refusal: a newcomer trying once a second made ~2
    attempts a second, over the connection rate; they neither renew the ban nor spend the rate, so
    it is in 30 s after the flood stopped."""
    limits = AddressLimits()
    guard, now = AddressGuard(limits), T0
    while now < T0 + 20_000:  # the flood: 100 a second for 20 s
        guard.allow_connection(NAT, now)
        now += 10
    stopped = now - 10
    verdicts = {t - stopped: guard.allow_connection(NAT, t) for t in range(stopped + 500, stopped + 40_000, 500)}
    assert {v for t, v in verdicts.items() if t < limits.ban_ms} == {"address_banned"}
    assert {v for t, v in verdicts.items() if t >= limits.ban_ms} == {None}  # in from then on, each try


async def test_a_banned_identity_is_refused_from_any_address_after_a_restart():
    banned, other = a_did(), a_did()
    gate, guard, clock, metrics = node(store=Store({banned: T0 + 600_000}))  # a ban of an earlier run
    async with trio.open_nursery() as nursery:
        await gate.start(nursery)
    for address in ((NAT, 5000), ("198.51.100.1", 5000), ("2001:db8::1", 5000)):
        assert (await connect(gate, banned, address)).muxed_conn.is_closed
    assert metrics.get("connections_refused", reason="banned", stage="connect") == 3
    assert not (await connect(gate, other, ("198.51.100.1", 5001))).muxed_conn.is_closed
    assert not guard.banned(other) and metrics.get("bans", kind="address") == 0


async def test_strangers_handshakes_are_rated_across_addresses_but_a_known_peers_address_is_not():
    gate, guard, clock, metrics = node()
    friend = a_did()
    guard.known.add(friend)
    await connect(gate, friend, ("192.0.2.77", 4000))  # a known peer's address, remembered (its first
    burst = gate.strangers.limits.handshakes_burst - 1  # handshake there took a token: it was no one yet)
    refusals = [gate.admit_at_accept((f"10.{i}.0.1", 5000)) for i in range(burst + 5)]  # one each from many /24s
    assert refusals[:burst] == [None] * burst
    assert set(refusals[burst:]) == {"strangers_handshake_rate"}
    assert gate.admit_at_accept(("192.0.2.77", 4001)) is None  # the friend reconnecting is not rated
    assert metrics.get("bans", kind="address") == 0  # a swarm's rate is no strike against any address
    clock.now += 1000
    assert gate.admit_at_accept(("10.200.0.1", 5000)) is None  # the rate refills


async def test_a_friends_stored_address_is_not_held_to_the_strangers_handshake_rate_after_a_restart():
    friend, stranger = a_did(), a_did()
    store = Store()
    rows = [{"did": friend, "addresses": ["/ip4/192.0.2.50/tcp/7822"], "last_seen": "2026-12-01"},
            {"did": stranger, "addresses": ["/ip4/192.0.2.60/tcp/7822"], "last_seen": "2026-12-01"}]
    store.read = lambda fn, *args: _answer(rows if fn.__name__ == "list_peers" else {})
    gate, guard, clock, metrics = node(store=store)
    guard.known.add(friend)
    async with trio.open_nursery() as nursery:
        await gate.start(nursery)
    for i in range(gate.strangers.limits.handshakes_burst):  # a swarm spends the rate
        gate.admit_at_accept((f"10.{i}.0.1", 5000))
    assert gate.admit_at_accept(("192.0.2.60", 5000)) == "strangers_handshake_rate"  # a stranger's stored address
    assert gate.admit_at_accept(("192.0.2.50", 5000)) is None  # the friend's


async def _answer(value):
    return value


async def test_a_peer_without_an_ed25519_key_is_cut_off_and_refused_at_connect_like_any_identity(monkeypatch):
    from libp2p.crypto.secp256k1 import create_new_key_pair
    from libp2p.peer.id import ID

    gate, guard, clock, metrics = node(peer_limits=PeerLimits(invalid_threshold=3))
    peer_id = ID.from_pubkey(create_new_key_pair().public_key)  # secp256k1: no DID

    async def connect_without_did() -> Conn:
        conn = Conn(a_did(), (NAT, 7000))
        conn.muxed_conn.peer_id = peer_id
        async with trio.open_nursery() as nursery:
            gate._on_connected(conn, nursery)
        return conn

    assert not (await connect_without_did()).muxed_conn.is_closed
    spawned = []  # what the guard starts on its own (its disconnect of the peer)
    monkeypatch.setattr(trio.lowlevel, "spawn_system_task", lambda fn, *args: spawned.append((fn, args)))
    for _ in range(3):
        guard.invalid_from_peer_id(peer_id, "bad_message")
    monkeypatch.undo()
    assert [args for _, args in spawned] == [(peer_id,)]  # cut off once, at the threshold
    assert metrics.get("bans", kind="identity") == 1
    assert (await connect_without_did()).muxed_conn.is_closed  # and refused when it comes back
    assert metrics.get("connections_refused", reason="banned", stage="connect") == 1
