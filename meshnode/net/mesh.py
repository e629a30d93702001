"""The node on the mesh: a libp2p host with Kad-DHT, GossipSub and meshnode's protocols.

Theory of operation
-------------------
``Mesh`` is the composition root of the network layer: it builds each service
with what it needs passed in its constructor (the peer guard, admission,
gating, discovery, exchange, sync, gossip, heartbeats, liveness, reputation,
consensus: one ``mesh_*`` or named module each), makes the libp2p objects when
it runs (``Libp2pParts``, shared by the services) and lets each service
register its own stream handlers and topics. The rest of the node calls the
Mesh's public methods, which forward to the service that does the work; it
holds no protocol logic of its own.

Everything runs in one nursery (``Mesh.run``); cancelling it stops the host,
the DHT, pubsub and every loop, and the TCP listener is closed explicitly
(leaving ``host.run()`` alone does not close it in py-libp2p 0.8.1).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Callable

import multiaddr
import trio

from meshnode.base.container import Container, Limits, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net import libp2p_dht_fixes, libp2p_fixes, mesh_publish
from meshnode.net.bootstrap import BootstrapPeer
from meshnode.net.errors import NetError
from meshnode.net.liveness import LivenessTracker, Thresholds
from meshnode.net.addresses import AddressGuard, AddressLimits
from meshnode.net.budget import BudgetLimits, CpuBudgets
from meshnode.net.inbound import connection_limits, mend_inbound
from meshnode.net.mesh_exchange import REQUEST_TIMEOUT, Exchange, HelloHook
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.peer_guard import PeerGuard
from meshnode.net.pubsub_guard import PubsubGuard
from meshnode.net.pubsub_rules import PubsubLimits
from meshnode.net.stream_charge import charge_inbound_streams
from meshnode.net.retry_hints import RetryHints, RetryLimits
from meshnode.net.mesh_admission import AdmissionService
from meshnode.net.events import PeerEvents
from meshnode.net.mesh_gating import Gating
from meshnode.net.offload import INLINE_BYTES, Offload
from meshnode.net.mesh_lookup import Discovery
from meshnode.net.gossip_timing import GossipTiming
from meshnode.net.mesh_gossip import CONTAINER_TOPIC, ContainerGossip
from meshnode.net.mesh_liveness import PeerLiveness
from meshnode.net.heartbeat_stream import HeartbeatStreams
from meshnode.domain.consensus.committee import Committee
from meshnode.domain.consensus.tendermint import BlockLimits, Timeouts
from meshnode.net.mesh_consensus import CONSENSUS_TOPIC, Consensus
from meshnode.net.mesh_reputation import Reputation
from meshnode.net.events import MeshHooks
from meshnode.domain.reputation import GOSSIP_THRESHOLDS
from meshnode.net.mesh_sync import SyncSessions
from meshnode.domain.sync.selective import Want
from meshnode.net.standing import PeerLimits, Standing
from meshnode.net.strangers import StrangerGate, StrangerLimits
from meshnode.net.author_rate import RateSettings
from meshnode.store import Store
from meshnode.store.known import KnownAuthors
from meshnode.store.quotas import Quotas

log = logging.getLogger("meshnode.net")



@dataclass
class NetConfig:
    listen: list[str]
    announce: list[str]
    bootstrap: list[BootstrapPeer]
    name: str
    heartbeat_ms: int = 10_000
    max_connections: int = 300  # [net] max_connections: py-libp2p's connection limits scale with it (net/inbound.py)
    thresholds: Thresholds = field(default_factory=Thresholds)
    interests: list[str] = field(default_factory=list)
    expertise: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    peer_limits: PeerLimits = field(default_factory=PeerLimits)
    budget_limits: BudgetLimits = field(default_factory=BudgetLimits)  # [peers] cpu_* and *_factor
    address_limits: AddressLimits = field(default_factory=AddressLimits)
    stranger_limits: StrangerLimits = field(default_factory=StrangerLimits)  # [peers] strangers_*, new_peers_*
    retry_limits: RetryLimits = field(default_factory=RetryLimits)  # [peers] early_push_*: strangers' early pushes
    pubsub_limits: PubsubLimits = field(default_factory=PubsubLimits)  # what one peer's pubsub RPCs may carry
    workers: int = 2  # [peers] decode_workers: threads decoding and verifying large input
    work_queue: int = 64  # [peers] decode_queue: jobs waiting for a worker
    inline_bytes: int = INLINE_BYTES  # [peers] inline_bytes: smaller input is decoded on the event loop
    frame_timeout_s: float = 10.0  # [peers] frame_timeout_seconds: for a sync frame's prefix, then + length at 64 KiB/s
    sync_sessions: int = 8  # [peers] sync_sessions: inbound sync sessions of unknown peers at once, in all
    sync_sessions_per_peer: int = 2  # [peers] sync_sessions_per_peer
    container_limits: Limits = field(default_factory=Limits)
    maintenance_s: float = 30.0
    gossip_heartbeat_s: float = 1.0
    sync_s: float = 30.0
    reputation_s: float = 60.0
    reputation_first_s: float = 10.0  # the first reputation round this soon after start; then doubling intervals
    sync_classes: list[str] = field(default_factory=list)  # [sync]: empty lists and 0 mean no condition
    sync_tags: list[str] = field(default_factory=list)
    sync_window_days: float = 0.0
    min_trust: float = 0.0
    public_goals: bool = False  # [sync] public_goals: the want asks for goals anyone may see

    quotas: Quotas = field(default_factory=Quotas)  # [limits] unknown_*: what strangers may make it hold
    known_min_trust: float = 0.7
    author_rate: RateSettings = field(default_factory=RateSettings)
    max_unknown_peers: int = 2000

    committee_dids: list[str] = field(default_factory=list)  # [consensus] committee: the genesis validators
    consensus_timeouts: Timeouts = field(default_factory=Timeouts)
    consensus_block_limits: BlockLimits = field(default_factory=BlockLimits)

    def committee(self) -> Committee | None:
        """The genesis committee: every listed validator with equal weight (all nodes list the same)."""
        return Committee.of({did: 1 for did in self.committee_dids}) if self.committee_dids else None

    def want(self, now: int) -> Want:
        return Want.from_settings(self.sync_classes, self.sync_tags, self.sync_window_days, now, self.public_goals)


def stranger_limits(config: NetConfig) -> StrangerLimits:
    """The strangers' limits, their connections at most half of ``[net] max_connections`` (the rest
    is kept for known peers and our own dials, whatever ``[peers] strangers_connections`` says)."""
    limits = config.stranger_limits
    return replace(limits, max_connections=max(1, min(limits.max_connections, config.max_connections // 2)))


class Mesh:
    def __init__(self, key: NodeKey, config: NetConfig, store: Store, metrics: Metrics,
                 clock: Callable[[], int] = now_ms, *, hooks: MeshHooks | None = None, validator=None,
                 on_hello: HelloHook | None = None):
        """``validator``: this node's validator LLM lent to peers that ask (None: no LLM here), with
        async ``may_ask(did) -> bool`` and ``judge(prompt, answer) -> (rating, comment)``;
        ``on_hello``: takes a new child's ``spawn_hello`` (None: this node takes none)."""
        self.key = key
        self.config = config
        self.store = store
        self.metrics = metrics
        self.clock = clock
        self.standing = Standing(config.peer_limits)
        self.budgets = CpuBudgets(config.budget_limits)
        self.address_guard = AddressGuard(config.address_limits)
        self.offload = Offload(config.workers, config.work_queue, config.inline_bytes,
                               cost_of=lambda did: self.budgets.pressure(did, self.clock()), metrics=metrics,
                               is_known=lambda did: did in self.known)  # known peers' jobs first
        # all strangers together: new identities a second, connections and streams at once (net/strangers.py)
        self.strangers = StrangerGate(stranger_limits(config))
        self.liveness = LivenessTracker(config.thresholds)
        self.parts = Libp2pParts()  # made by run()
        self.timing = GossipTiming(metrics)  # each gossiped container's stages (mesh_gossip, issue 18)
        # authors whose containers strangers' traffic never evicts or rate-limits (mesh_admission); as
        # peers, they are exempt from address limits and get larger CPU budgets (peer_guard)
        self.known = KnownAuthors({key.did, *config.committee_dids})
        self.guard = PeerGuard(self.parts, self.standing, self.budgets, self.address_guard, self.offload, self.known,
                               store, metrics, clock, strangers=self.strangers)
        self.pubsub_guard = PubsubGuard(self.guard, metrics, clock, config.pubsub_limits)  # attached in run()
        self.hooks = hooks if hooks is not None else MeshHooks()  # the GMP service, the reactor's poke
        self.events = PeerEvents()  # connections identified and gone, peers back, upkeep rounds
        self.admission = AdmissionService(store, key, self.known, self.guard, self.parts, self.hooks, self.events,
                                          metrics, clock, quotas=config.quotas, known_min_trust=config.known_min_trust,
                                          max_unknown_peers=config.max_unknown_peers, rate=config.author_rate,
                                          upkeep_s=config.maintenance_s)
        self.gating = Gating(self.parts, store, self.guard, self.standing, self.address_guard, self.events, metrics,
                             clock, strangers=self.strangers)
        self.discovery = Discovery(self.parts, key, store, self.gating, self.events, metrics, clock, name=config.name,
                                   bootstrap=config.bootstrap, maintenance_s=config.maintenance_s,
                                   interests=config.interests, expertise=config.expertise, roles=config.roles)
        self.peer_liveness = PeerLiveness(self.liveness, self.parts, self.known, self.events, store, metrics, clock,
                                          thresholds=config.thresholds)
        # heartbeat_stream: one stream per direct connection, each way
        self.heartbeats = HeartbeatStreams(key, self.parts, self.gating, self.guard, self.peer_liveness, self.events,
                                           metrics, clock, heartbeat_ms=config.heartbeat_ms,
                                           dead_ms=config.thresholds.dead_ms, limits=config.container_limits)
        self.container_gossip = ContainerGossip(self.parts, key, self.guard, self.admission, self.offload,
                                                self.standing, self.timing, metrics, clock,
                                                limits=config.container_limits)
        self.reputation = Reputation(store, key, self.standing, self.known, metrics, clock,
                                     publish=self.container_gossip.gossip,
                                     coworkers=self.hooks.coworkers, first_s=config.reputation_first_s,
                                     every_s=config.reputation_s)
        self.consensus = Consensus(self.parts, key, store, self.guard, metrics, clock,
                                   timeouts=config.consensus_timeouts, block_limits=config.consensus_block_limits)
        self.exchange = Exchange(key, store, self.guard, self.standing, self.address_guard, self.budgets,
                                 self.admission, self.gating, self.discovery.reach, self.events, metrics, clock,
                                 max_frame_bytes=config.peer_limits.max_frame_bytes, min_trust=config.min_trust,
                                 limits=config.container_limits, validator=validator, on_hello=on_hello,
                                 retry_hints=RetryHints(config.retry_limits))
        self.sync = SyncSessions(self.parts, key, store, self.guard, self.standing, self.address_guard, self.gating,
                                 self.discovery.reach, self.exchange, self.admission,
                                 self.reputation.credit_sync_session,
                                 self.hooks, self.liveness, self.known, self.events, metrics, clock, want=config.want,
                                 min_trust=config.min_trust, every_s=config.sync_s, sessions=config.sync_sessions,
                                 sessions_per_peer=config.sync_sessions_per_peer,
                                 frame_timeout_s=config.frame_timeout_s)

    @property
    def host(self):
        return self.parts.host

    @property
    def dht(self):
        return self.parts.dht

    @property
    def pubsub(self):
        return self.parts.pubsub

    @property
    def gossipsub(self):
        return self.parts.gossipsub

    @property
    def gmp(self):
        """The GMP service (``net.mesh_gmp.MeshGmp``) once it subscribed to the hooks, else None."""
        return self.hooks.gmp

    # --- the services' public calls -----------------------------------------------

    def consensus_status(self) -> dict:
        return self.consensus.consensus_status()

    async def consensus_submit(self, value: bytes, wait_s: float = 0.0) -> dict:
        return await self.consensus.consensus_submit(value, wait_s)

    async def propose_next_committee(self) -> dict:
        return await self.consensus.propose_next_committee()

    async def gossip(self, c: Container) -> None:
        await self.container_gossip.gossip(c)

    async def publish(self, c: Container) -> dict:
        """A container for everyone: gossiped, or pushed to the connected peers when too large for
        gossip (mesh_publish); says which."""
        return await mesh_publish.publish(c, gossip=self.container_gossip.gossip, push=self.exchange.push,
                                          connected=self.parts.connected_dids(), metrics=self.metrics)

    async def deliver(self, c: Container) -> dict:
        """A container for named recipients (a friends note): pushed at once to those this node is
        connected to (the others get it at their next sync); the push report (mesh_publish.push_to)."""
        recipients = c.head.get("recipient") if isinstance(c.head.get("recipient"), list) else []
        connected = set(self.parts.connected_dids())
        return await mesh_publish.push_to(c, [d for d in recipients if d in connected and d != self.key.did],
                                          push=self.exchange.push, metrics=self.metrics)

    def peers_snapshot(self) -> dict:
        return self.peer_liveness.peers_snapshot()

    async def refresh_known(self) -> None:
        await self.admission.refresh_known()

    async def reputation_round(self) -> dict:
        return await self.reputation.reputation_round()

    async def request(self, did: str, message: dict, expected: str, timeout: float = REQUEST_TIMEOUT) -> dict:
        return await self.exchange.request(did, message, expected, timeout)

    async def push(self, did: str, containers: list[Container]) -> dict:
        return await self.exchange.push(did, containers)

    async def fetch(self, did: str, container_dids: list[str]) -> list[Container]:
        return await self.exchange.fetch(did, container_dids)

    async def ask_validation(self, did: str, prompt: str, answer: str, timeout: float) -> tuple[int, str]:
        return await self.exchange.ask_validation(did, prompt, answer, timeout)

    async def sync_with(self, did: str) -> dict:
        return await self.sync.sync_with(did)

    def remember_refusals(self, did: str, batch: list, ack: dict) -> None:
        self.sync.remember_refusals(did, batch, ack)

    async def find(self, did: str) -> dict:
        return await self.discovery.find(did)

    async def reach(self, did: str) -> None:
        await self.discovery.reach(did)

    async def dial(self, did: str, addresses: list[str]) -> None:
        await self.discovery.dial(did, addresses)

    async def ping(self, did: str) -> float:
        return await self.discovery.ping(did)

    async def find_interest(self, tag: str) -> list[dict]:
        return await self.discovery.find_interest(tag)

    async def lookup_announce(self, did: str, *, cached: bool = True) -> Container:
        return await self.discovery.lookup_announce(did, cached=cached)

    async def announce_now(self, interests: list[str] = (), expertise: list[str] = ()) -> dict:
        return await self.discovery.announce_now(interests, expertise)

    # --- lifecycle ------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        from libp2p import new_host
        from libp2p.crypto.ed25519 import create_new_key_pair
        from libp2p.crypto.x25519 import create_new_key_pair as x25519_key_pair
        from libp2p.kad_dht.common import PROTOCOL_ID as DHT_PROTOCOL
        from libp2p.kad_dht.kad_dht import DHTMode, KadDHT
        from libp2p.network.config import ConnectionConfig
        from libp2p.pubsub.gossipsub import PROTOCOL_ID, PROTOCOL_ID_V11, PROTOCOL_ID_V12, GossipSub
        from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator, Pubsub
        from libp2p.pubsub.score import ScoreParams
        from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
        from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
        from libp2p.tools.anyio_service import background_trio_service

        libp2p_fixes.route_libp2p_logging(logging.WARNING)
        libp2p_fixes.enlarge_pubsub_queues()
        libp2p_fixes.verify_sender_records_once()
        libp2p_fixes.cut_idle_cost()  # yamux credit in batches, own record bytes reused (issue 18)
        libp2p_dht_fixes.dht_hop_timeout()
        libp2p_dht_fixes.close_idle_dht_streams()  # find-tail: cancelled requests left the DHT deaf
        listen = [multiaddr.Multiaddr(a) for a in self.config.listen]
        self._check_ports(listen)
        key_pair = create_new_key_pair(self.key.seed())
        host_options = {}
        if self.config.announce:
            host_options["announce_addrs"] = [multiaddr.Multiaddr(a) for a in self.config.announce]
        else:
            host_options["addrs_factory"] = _wildcard_to_interfaces
        self.parts.host = host = new_host(
            key_pair=key_pair,
            # Noise only: a default host also accepts plaintext peers
            sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
            muxer_opt={YAMUX: Yamux},
            # one connection per peer: the default (3) staggers dials and costs ~250 ms per connect
            connection_config=ConnectionConfig(max_connections_per_peer=1,
                                               **connection_limits(self.config.max_connections)),
            **host_options,
        )
        if host.get_id().to_base58() != self.key.peer_id:
            raise NetError("identity_mismatch", "the libp2p peer id does not match the node's key")
        # inbound slots given back when a connection ends; refused addresses closed before the handshake
        mend_inbound(host.get_network(), self.gating.admit_at_accept, self.gating.refused_at_accept,
                     self.gating.failed_handshake)
        self.parts.dht = dht = KadDHT(host, DHTMode.SERVER, strict_validation=True)
        self.discovery.register(dht)
        libp2p_dht_fixes.answer_find_node_for_self(dht)
        libp2p_dht_fixes.widen_dht_inbound(dht)  # find-tail
        dht.handle_stream = charge_inbound_streams(dht.handle_stream, self.guard, metrics=self.metrics,
                                                   clock=self.clock, protocol="dht")  # issue 36
        host.set_stream_handler(DHT_PROTOCOL, dht.handle_stream)
        # GossipSub, set deliberately (py-libp2p defaults in brackets):
        # heartbeat 1 s by default [120 s: the mesh would take minutes to form]; spam limit 200 msg/s per
        # topic [10, which also throttles our own publishing silently]; peer scoring stays off
        # [weights 0]: standing and, later, reputation decide who is cut off.
        self.parts.gossipsub = gossipsub = GossipSub(
            protocols=[PROTOCOL_ID_V12, PROTOCOL_ID_V11, PROTOCOL_ID], degree=6, degree_low=4, degree_high=12,
            heartbeat_initial_delay=0.1, heartbeat_interval=self.config.gossip_heartbeat_s, time_to_live=60,
            spam_protection_enabled=True, max_messages_per_topic_per_second=200.0,
            score_params=ScoreParams(p6_appl_slack_weight=1.0, app_specific_score_fn=self.reputation.app_score,
                                     **GOSSIP_THRESHOLDS),  # trust feeds the peer score
        )
        self.parts.pubsub = pubsub = Pubsub(host, gossipsub, strict_signing=True,
                                      msg_id_constructor=ContentAddressedMessageIDGenerator())
        self.container_gossip.register(pubsub)
        self.consensus.register(pubsub)
        libp2p_fixes.validation_errors_without_the_message(pubsub)
        libp2p_fixes.count_gossip_drops(pubsub, gossipsub, self.container_gossip.dropped)  # first: the others forget
        libp2p_fixes.count_gossip_refused_unseen(pubsub, self.guard.invalid_from_peer_id,
                                                 pardoned=self.admission.gossip_pardoned)
        libp2p_fixes.forget_ignored(pubsub, self.container_gossip.was_ignored)
        self.pubsub_guard.attach(pubsub, gossipsub)  # every frame charged before it is parsed (issue 36)
        libp2p_fixes.survive_bad_pubsub_rpcs(pubsub, self.guard.invalid_from_peer_id, serve=self.pubsub_guard.serve)
        libp2p_fixes.one_validation_per_message(pubsub)  # outermost: copies wait for the first (issue 18)
        libp2p_fixes.verify_signatures_once()
        libp2p_fixes.idontwant_only_for_large(gossipsub)
        self.exchange.register(host)
        self.sync.register(host)
        self.heartbeats.register(host)
        try:
            async with host.run(listen_addrs=listen), background_trio_service(dht), \
                    background_trio_service(pubsub), background_trio_service(gossipsub):
                async with trio.open_nursery() as nursery:
                    await self.admission.refresh_known()
                    await self.gating.start(nursery)
                    await pubsub.wait_until_ready()
                    containers = await pubsub.subscribe(CONTAINER_TOPIC)
                    committee = self.config.committee()
                    agreeing = await pubsub.subscribe(CONSENSUS_TOPIC) if committee else None
                    if committee:
                        nursery.start_soon(self.consensus.run, agreeing, committee)
                    nursery.start_soon(self.container_gossip.read, containers)
                    nursery.start_soon(self.peer_liveness.run)
                    nursery.start_soon(self.discovery.run)
                    nursery.start_soon(libp2p_fixes.prune_equivocation_forever, gossipsub)
                    nursery.start_soon(self.sync.run)
                    nursery.start_soon(self.reputation.run)
                    nursery.start_soon(self.admission.run)
                    task_status.started(self)
                    await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()  # leaving host.run() does not close the listener
            pubsub.seen_messages.stop()  # Pubsub() starts a sweeper thread nothing else stops

    def _check_ports(self, listen: list) -> None:
        for addr in listen:
            port = int(addr.value_for_protocol("tcp"))
            ip = addr.value_for_protocol("ip4") if "ip4" in addr.protocols() else None
            if port and ip and not libp2p_fixes.port_is_free(port, ip):
                raise NetError("port_in_use", f"{addr} is already in use (another node?); pick another [net] listen")

    def addresses(self) -> list[str]:
        """The node's announced addresses, each ending in /p2p/<peer id>."""
        return self.discovery.addresses()

    def formation(self) -> dict:
        """How far this node has joined the mesh: connected peers, GossipSub mesh peers per topic
        (its degree is ``degree``), announces held in the DHT store (tests/test_mesh_formation.py)."""
        if self.host is None or self.gossipsub is None:
            return {"connected": 0, "gossip_mesh": {}, "degree": 0, "degree_low": 0}
        return {"connected": len(self.host.get_connected_peers()),
                "gossip_mesh": {t: len(self.gossipsub.mesh.get(t, ())) for t in (CONTAINER_TOPIC,)},
                "degree": self.gossipsub.degree, "degree_low": self.gossipsub.degree_low,
                "lookups": self.discovery.lookup_state()}  # announce pushes, puts, first heard, slow finds


def _wildcard_to_interfaces(candidates: list) -> list:
    """Announce real interface addresses instead of /ip4/0.0.0.0 (py-libp2p advertises the wildcard)."""
    out = []
    for addr in candidates:
        if "ip4" in addr.protocols() and addr.value_for_protocol("ip4") == "0.0.0.0":
            port = addr.value_for_protocol("tcp")
            out += [multiaddr.Multiaddr(f"/ip4/{ip}/tcp/{port}") for ip in libp2p_fixes.local_ipv4s()]
        else:
            out.append(addr)
    return out
