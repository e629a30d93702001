"""Who may stay connected, and what a peer speaks: the ``Gating`` service.

py-libp2p has no connection gater: a peer cut off for invalid input could dial
again at once, and only the exchange and sync handlers refused it. Here a
network notifee closes a banned peer's connection as soon as it is made, and
again once identify has finished (a connection that raced the ban), counting
every refusal (``connections_refused``); our own dials to a banned peer are
refused before they start, including the dials py-libp2p's DHT and pubsub make
on their own (the swarm's ``dial_peer`` is wrapped: otherwise a routing-table
refresh connects a banned peer for the moment until the notifee closes it). A banned identity
is refused from whatever address it comes (``reason=banned``). Since identities are free,
inbound connections from an unknown peer are also refused when its address connects too often
(``reason=rate``) or is banned for handshake-level abuse (``reason=address_banned``,
``addresses.AddressGuard``: rate refusals, failed or unfinished handshakes, connections that
end without a stream, all reported here). Bans are counted by kind (``bans{kind=identity}``
in ``peer_guard``, ``bans{kind=address,why=...}`` here).

Strangers as one (issue 36, ``strangers.StrangerGate``): an inbound connection
of a peer that is not known is refused when it is a new identity over the
rate of newcomers for all addresses (``reason=new_identity_rate``), or when
the strangers' connections are full and no stranger qualifies to give up its
place (``reason=strangers_full``; one that does is closed: ``strangers_evicted``). A stranger's
inbound connection opens streams at a bounded rate: one over it is reset as it opens, before
multistream negotiates its protocol (``stream_refused{protocol=unnegotiated,reason=open_rate}``;
the swarm's stream handler is wrapped).

Identify also says which protocols a peer speaks. meshnode's own protocols
are opened only to peers that list them (a plain libp2p peer answers ``na``,
which py-libp2p logs as a 7-line error); a peer that refuses one anyway is
remembered until it disconnects. A stream that fails because its connection
closed as it was opened is tried once more (``stream_retries``).
"""

from __future__ import annotations

import logging
from typing import Callable

import trio

from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net import libp2p_fixes
from meshnode.net.addresses import AddressGuard
from meshnode.net.budget import BoundedLRU
from meshnode.net.errors import NetError
from meshnode.net.events import PeerEvents
from meshnode.net.inbound import remote_address
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.peer_guard import PeerGuard, peer_id_object, standing_key
from meshnode.net.standing import Standing
from meshnode.net.strangers import StrangerGate
from meshnode.store.peers import active_bans, list_peers

log = logging.getLogger("meshnode.net")

IDENTIFY_WAIT = 10.0  # how long a new connection may take to be identified before we stop watching it
CLOSED_CONNECTION_WAIT = 2.0  # how long a closing connection may stay listed before a stream is tried again


def _did_of(peer_id) -> str | None:
    try:
        return peer_id_to_did(peer_id.to_base58())
    except MeshnodeError:  # not an Ed25519 peer: it cannot be one of ours, nor banned by DID
        return None


class Gating:
    """The gating service: ``start`` watches every connection of the host (a connection kept and
    identified fires ``PeerEvents.identified``, a peer's last one closed ``gone``);
    ``admit_at_accept`` and ``refused_at_accept`` judge an inbound address before its handshake
    (``inbound.mend_inbound``); ``open_stream`` is every service's way to a peer, ``speaks`` what
    a peer is known to speak, ``refuse_dial`` refuses our own dials to a banned peer. Who is banned
    or known, and from which address, the ``guard`` says."""

    def __init__(self, parts: Libp2pParts, store, guard: PeerGuard, standing: Standing, address_guard: AddressGuard,
                 events: PeerEvents, metrics, clock: Callable[[], int], strangers: StrangerGate | None = None):
        self.parts, self.store, self.guard, self.standing = parts, store, guard, standing
        self.address_guard, self.events, self.metrics, self.clock = address_guard, events, metrics, clock
        self.strangers = strangers if strangers is not None else StrangerGate()
        self._unsupported: dict[str, set[str]] = {}  # DID -> protocols it refused on its current connection
        self._admitted_at_accept = BoundedLRU(1024)  # "ip|port" of connections whose address passed at accept
        self._known_host_seen = BoundedLRU(1024)  # addresses known peers connected from: no stranger handshake rate
        self._stored_hosts = BoundedLRU(4096)  # address -> DIDs the store has it for (at start): known ones are exempt
        self._streamless = BoundedLRU(4096)  # id of kept inbound connections of unknown peers -> their address
        self._streamed = BoundedLRU(4096)  # id of connections whose peer opened a stream

    @property
    def host(self):
        return self.parts.host

    async def start(self, nursery: trio.Nursery) -> None:
        """Restore the bans of earlier runs, and watch every connection of the host from now on."""
        now = self.clock()
        for did, until in (await self.store.read(active_bans, now)).items():
            self.standing.restore_ban(did, until, now)
        await self._remember_peers()
        network = self.host.get_network()
        network.register_notifee(_gatekeeper(self, nursery))
        _refuse_banned_dials(self, network)
        _refuse_fast_stream_opens(self, network)

    def _on_connected(self, conn, nursery: trio.Nursery) -> None:
        did = _did_of(conn.muxed_conn.peer_id)
        if did is not None and self.guard.is_known(did):
            address = remote_address(conn.muxed_conn)
            if address:
                self._known_host_seen.put(address[0], True)
        if self.guard.banned(standing_key(did, conn.muxed_conn.peer_id)):
            self._refuse(conn, did, "connect", nursery)
            return
        refusal = self._address_refusal(conn, did)
        if refusal is not None:
            self._refuse(conn, did, "connect", nursery, reason=refusal)
            return
        if not self._admit_stranger(conn, did, nursery):
            return
        self._watch_streams(conn, did)
        if did is not None:
            nursery.start_soon(self._check_once_identified, conn, did, nursery)

    # --- strangers as one (issue 36) ----------------------------------------------

    async def _remember_peers(self) -> None:
        """Peers the store knows (the most recently seen first) are no newcomers after a restart, and
        the addresses it has for them are remembered: a friend dialling in from one after our restart
        is not held to the strangers' handshake rate (whether it is known is asked at accept)."""
        rows = await self.store.read(list_peers)
        rows.sort(key=lambda r: r["last_seen"] or "", reverse=True)
        for row in reversed(rows[:self.strangers.limits.remembered]):
            self.strangers.remember(row["did"])
            for host in {ip_of(a) for a in row["addresses"]} - {None}:
                dids = self._stored_hosts.get(host) or ()
                self._stored_hosts.put(host, (*dids[-7:], row["did"]))

    def _admit_stranger(self, conn, did: str | None, nursery: trio.Nursery) -> bool:
        """Whether a new connection may stay under the limits of strangers as a whole (our own dials
        and known peers: always). Refused: closed and counted; a stranger evicted for it: closed."""
        secured = getattr(conn.muxed_conn, "secured_conn", None)
        if getattr(secured, "is_initiator", True) or (did is not None and self.guard.is_known(did)):
            return True
        who = did if did is not None else str(conn.muxed_conn.peer_id)
        now = self.clock()
        if not self.strangers.admit_identity(who, now, standing=self.standing.summary(who)["valid"] > 0):
            self._refuse(conn, did, "connect", nursery, reason="new_identity_rate")
            return False
        self.strangers.forget(lambda peer: not self.guard.is_known(peer))  # friends made since hold no slot
        admitted, victim = self.strangers.connect(conn, who, now, lambda peer: self.guard.budgets.pressure(peer, now))
        if not admitted:
            self._refuse(conn, did, "connect", nursery, reason="strangers_full")
            return False
        if victim is not None:
            self.metrics.inc("strangers_evicted")
            nursery.start_soon(_close, victim)
        self.metrics.set("strangers_connected", self.strangers.connected)
        return True

    def admit_at_accept(self, address: tuple) -> str | None:
        """Before the handshake: why a new inbound connection is refused for its address (banned for
        handshake-level abuse, or it connects too often), or None. An address a known peer is
        connected from is left to the check at connect, which knows who is connecting."""
        host = address[0]
        if host in self._known_hosts():
            return None
        refusal = self._allow_address(host)
        if refusal is None and not self._known_host(host) \
                and not self.strangers.admit_handshake(self.clock()):
            refusal = "strangers_handshake_rate"  # not a strike: a swarm spread over many addresses
        if refusal is None:
            self._admitted_at_accept.put(f"{address[0]}|{address[1]}", True)
        return refusal

    def _allow_address(self, host: str) -> str | None:
        now = self.clock()
        refusal = self.address_guard.allow_connection(host, now)
        if refusal == "rate" and self.address_guard.is_banned(host, now):  # that strike started a ban
            self._address_banned(host, "rate")
        return refusal

    def _strike(self, host: str, kind: str) -> None:
        """One more handshake-level abuse from ``host`` (``addresses.STRIKES``)."""
        self.metrics.inc("address_abuse", kind=kind)
        if self.address_guard.strike(host, kind, self.clock()):
            self._address_banned(host, kind)

    def _address_banned(self, host: str, why: str) -> None:
        self.metrics.inc("bans", kind="address", why=why)
        log.warning("refusing connections from %s for a while: too many %s strikes", host, why)

    def failed_handshake(self, host: str) -> None:
        """An inbound connection from ``host`` failed its Noise or multistream handshake, or did not
        finish it in time (``inbound.mend_inbound``)."""
        if host not in self._known_hosts():
            self._strike(host, "handshake")

    def _watch_streams(self, conn, did: str | None) -> None:
        """Remember a kept inbound connection of an unknown peer: if it ends without its peer opening a
        stream, that is connect-and-leave churn (``no_stream``)."""
        secured = getattr(conn.muxed_conn, "secured_conn", None)
        if getattr(secured, "is_initiator", True) or (did is not None and self.guard.is_known(did)):
            return
        address = remote_address(conn.muxed_conn)
        if address is not None:
            self._streamless.put(str(id(conn.muxed_conn)), address[0])

    def _on_stream(self, stream) -> None:
        if not getattr(stream.muxed_stream, "is_initiator", True):  # opened by the peer
            self._streamed.put(str(id(stream.muxed_conn)), True)

    def refused_at_accept(self, host: str, reason: str) -> None:
        self.metrics.inc("connections_refused", reason=reason, stage="accept")
        log.debug("refused a connection from %s before its handshake (%s)", host, reason)

    def _known_host(self, host: str) -> bool:
        """Whether a known peer connected from ``host`` lately, or the store has ``host`` for one."""
        if self._known_host_seen.get(host) is not None:
            return True
        return any(self.guard.is_known(did) for did in self._stored_hosts.peek(host) or ())

    def _known_hosts(self) -> set[str]:
        """Addresses a known peer is connected from now (each also remembered for later)."""
        hosts = set()
        for pid in list(self.host.get_connected_peers()):
            did = _did_of(pid)
            if did is not None and self.guard.is_known(did):
                host = self.guard.host_of_peer(pid)
                if host:
                    hosts.add(host)
                    self._known_host_seen.put(host, True)
        return hosts

    def admit_stream_open(self, stream) -> bool:
        """Whether a stream the peer opened may go on to negotiate its protocol: not over the rate
        of its stranger's connection (``strangers.StrangerGate.admit_stream_open``)."""
        if self.strangers.admit_stream_open(getattr(stream, "swarm_conn", None), self.clock()):
            return True
        self.metrics.inc("stream_refused", protocol="unnegotiated", reason="open_rate")
        return False

    def _address_refusal(self, conn, did: str | None) -> str | None:
        """Why an inbound connection of an unknown peer is refused for its address, or None."""
        secured = getattr(conn.muxed_conn, "secured_conn", None)
        if getattr(secured, "is_initiator", True) or (did is not None and self.guard.is_known(did)):
            return None  # our own dial, or a known peer: exempt
        address = remote_address(conn.muxed_conn)
        if address is None:
            return None
        if self._admitted_at_accept.pop(f"{address[0]}|{address[1]}") is not None:
            return None  # its address was checked (and charged) as it was accepted
        return self._allow_address(address[0])

    async def _check_once_identified(self, conn, did: str, nursery: trio.Nursery) -> None:
        await libp2p_fixes.wait_identified(self.host, conn.muxed_conn.peer_id, IDENTIFY_WAIT,
                                           gone=lambda: conn.muxed_conn.is_closed)
        if self.guard.banned(did) and not conn.muxed_conn.is_closed:
            self._refuse(conn, did, "identify", nursery)
        elif not conn.muxed_conn.is_closed:
            # the new peer is told this node's announce at once (mesh_lookup), and heartbeats start
            # on this connection (heartbeat_stream)
            self.events.identified(did, conn, nursery)

    def _refuse(self, conn, did: str | None, stage: str, nursery: trio.Nursery, reason: str = "banned") -> None:
        self._streamless.pop(str(id(conn.muxed_conn)))  # closed by us: no churn of its peer's
        self.metrics.inc("connections_refused", reason=reason, stage=stage)
        log.debug("refused a connection from peer %s (%s, at %s)", did, reason, stage)
        nursery.start_soon(_close, conn)

    def _on_disconnected(self, conn) -> None:
        self.strangers.release(conn)
        self.metrics.set("strangers_connected", self.strangers.connected)
        key = str(id(conn.muxed_conn))
        host, streamed = self._streamless.pop(key), self._streamed.pop(key)
        if host is not None and streamed is None:
            self._strike(host, "no_stream")
        peer_id = conn.muxed_conn.peer_id
        if not self.host.get_network().get_connections(peer_id):
            did = _did_of(peer_id)
            self._unsupported.pop(did, None)
            self.events.gone(did)

    def speaks(self, did: str, protocol: str) -> bool | None:
        """Whether ``did`` speaks ``protocol``: from identify, or a refusal on this connection;
        None while unknown (not identified yet)."""
        if protocol in self._unsupported.get(did, ()):
            return False
        protocols = libp2p_fixes.identified_protocols(self.host, peer_id_object(did))
        return None if protocols is None else protocol in protocols

    async def open_stream(self, did: str, protocol: str):
        """A stream to ``did`` for one of meshnode's protocols, opened only if the peer speaks it
        (identify is awaited for a connection made a moment ago). NetError otherwise."""
        from libp2p.protocol_muxer.exceptions import ProtocolNotSupportedError

        pid = peer_id_object(did)
        if self.speaks(did, protocol) is None:
            await libp2p_fixes.wait_identified(self.host, pid, timeout=5.0)
        if self.speaks(did, protocol) is False:
            raise NetError("unsupported", f"{did} does not speak {protocol}")
        network = self.host.get_network()
        # A stream whose connection closed as it was opened fails, and py-libp2p 0.8.1 does not
        # dial again while the closed connection is still listed ("No valid connections
        # available"): a peer that was connected gets one more try, once that connection is gone.
        retry = bool(network.get_connections(pid)) and not self.guard.banned(did)
        while True:
            try:
                return await self.host.new_stream(pid, [protocol])
            except Exception as exc:  # py-libp2p raises several types when a peer is gone
                if isinstance(exc.__cause__, ProtocolNotSupportedError):
                    self._unsupported.setdefault(did, set()).add(protocol)
                    raise NetError("unsupported", f"{did} does not speak {protocol}") from None
                if not retry:
                    raise NetError("unreachable", f"cannot open {protocol} to {did}: {_why(exc)}") from None
                log.debug("opening %s to %s again after %s", protocol, did, _why(exc))
            retry = False
            self.metrics.inc("stream_retries", reason="connection_closed")
            await libp2p_fixes.wait_closed_connections_gone(network, pid, CLOSED_CONNECTION_WAIT)

    def refuse_dial(self, peer_id) -> None:
        """Our own dial to a banned peer is refused before it starts (NetError ``banned``)."""
        did = _did_of(peer_id)
        if self.guard.banned(did):
            self.metrics.inc("connections_refused", reason="banned", stage="dial")
            raise NetError("banned", f"{did} is cut off for invalid input until its ban ends")


def _why(exc: BaseException) -> str:
    """A failed stream's exception and its cause, short enough for an error line."""
    cause = exc.__cause__ or exc.__context__
    why = f"{type(exc).__name__}: {str(exc)[:160]}"
    return why + (f" ({type(cause).__name__}: {str(cause)[:160]})" if cause is not None else "")


def _refuse_banned_dials(gating: Gating, network) -> None:
    """Every dial of the swarm, whoever asks for it, is refused for a banned peer (SwarmException,
    which py-libp2p's callers expect from a failed dial)."""
    from libp2p.network.exceptions import SwarmException

    dial_peer = network.dial_peer

    async def dial_unless_banned(peer_id):
        try:
            gating.refuse_dial(peer_id)
        except NetError as exc:
            raise SwarmException(exc.reason) from None
        return await dial_peer(peer_id)

    network.dial_peer = dial_unless_banned


def _refuse_fast_stream_opens(gating: Gating, network) -> None:
    """Every inbound stream passes ``gating.admit_stream_open`` before py-libp2p's handler runs
    multistream on it; refused: reset at once."""
    handle = network.common_stream_handler

    async def handle_unless_too_fast(stream) -> None:
        if not gating.admit_stream_open(stream):
            await libp2p_fixes.reset_quietly(stream)
            return
        await handle(stream)

    network.common_stream_handler = handle_unless_too_fast


async def _close(conn) -> None:
    with trio.move_on_after(5):
        try:
            await conn.close()
        except Exception as exc:  # already closing: nothing left to refuse
            log.debug("closing a refused connection: %s", exc)


def _gatekeeper(gating: Gating, nursery: trio.Nursery):
    """The network notifee that hands connections made and lost to the gating service (libp2p is
    imported only when a node runs)."""
    from libp2p.abc import INotifee

    class Gatekeeper(INotifee):
        def __init__(self, gating: Gating, nursery: trio.Nursery):
            self.gating = gating
            self.nursery = nursery

        async def connected(self, network, conn) -> None:
            self.gating._on_connected(conn, self.nursery)

        async def disconnected(self, network, conn) -> None:
            self.gating._on_disconnected(conn)

        async def opened_stream(self, network, stream) -> None:
            self.gating._on_stream(stream)

        async def closed_stream(self, network, stream) -> None:
            pass

        async def listen(self, network, multiaddr) -> None:
            pass

        async def listen_close(self, network, multiaddr) -> None:
            pass

    return Gatekeeper(gating, nursery)


def ip_of(address: str) -> str | None:
    """The IP address of a multiaddr such as ``/ip4/192.0.2.1/tcp/7822``, or None."""
    parts = address.split("/")
    return parts[2] if len(parts) > 2 and parts[1] in ("ip4", "ip6") else None
