"""Joining the mesh, announcing this node and finding a peer by DID: the ``Discovery`` service.

Theory of operation
-------------------
Where the seconds went (20 processes on 2 cores, py-libp2p 0.8.1): every find
removed the local copy of the announce and ran a whole Kad-DHT ``get_value``,
which with quorum 0 asks *every* peer of the walk (10 s per silent hop) and then
writes the record back to every peer that lacked it, all before answering; and
each maintenance round looked up the announce of every routing-table peer that
way, one after the other. In a mesh of 20, that is 19 full walks per node per
round on two cores.

Now:

* Every announce a node validates (a PUT from its owner, an answer to a lookup,
  its own) is kept in ``AnnounceCache`` with when it was last seen. The owner
  puts it again every maintenance round, to the K closest peers, so a copy seen
  within ``fresh_s`` is as good as a walk; ``find`` answers from it and dials.
* Else the connected peers closest to the key (8) are asked at once (one round
  trip; the owner pushed it to its own connected peers), and only when
  none has it is there a walk, which stops at ``LOOKUP_QUORUM`` valid answers; each hop has
  its own timeout (``libp2p_dht_fixes.dht_hop_timeout``) and the whole lookup
  ``LOOKUP_TIMEOUT``: an absent DID is ``not_found`` within a bounded time.
* A node PUTs its announce straight to its connected peers (those it has not
  told this content yet) before the walk of put_value, which on a busy mesh
  outlasted its deadline so the record reached nobody.
* Bootstrap peers are dialled all at once; the routing table's announces are
  learned from the cache, the rest looked up a few at a time.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import multiaddr
import trio

from meshnode.base.container import Container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import did_to_peer_id, peer_id_to_did
from meshnode.net import dht_direct, libp2p_dht_fixes, libp2p_fixes, lookup_trace
from meshnode.net.announce import (
    NAMESPACE,
    MaintenanceCadence,
    RecordError,
    announce_addresses,
    interest_key,
    jittered,
    make_announce,
    record_key,
    select_record,
    validate_record,
)
from meshnode.net.bootstrap import BootstrapPeer
from meshnode.net.errors import NetError
from meshnode.net.events import PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_exchange import REQUEST_TIMEOUT
from meshnode.net.peer_guard import peer_id_object
from meshnode.store.peers import last_known_addresses, upsert_peer

log = logging.getLogger("meshnode.net")

ANNOUNCE_RECHECK_MS = 10 * 60 * 1000
LOOKUP_TIMEOUT = 10.0  # a whole find's lookup: connected peers, walk, find-peer walk (then the dial)
LOOKUP_QUORUM = 3  # valid answers a walk waits for (py-libp2p's 0 asks every peer it meets)
PUSH_GATHER_S = 0.2  # seconds newly identified peers are gathered into one announce push
PUSHED_AT_ONCE = 20  # connected peers told this node's announce per round (K, a bucket's size)
LEARNING_AT_ONCE = 4  # routing-table announces looked up concurrently
ASKED_AT_ONCE = 8  # connected peers (the closest to the key) asked for a record before a walk
ANNOUNCE_FRESH_S = 90.0  # a cached announce answers a find this long after it was last seen
ANNOUNCES_KEPT = 4096
ARRIVAL_WAIT_S = 2.0  # a lookup that found nothing waits this long more (within LOOKUP_TIMEOUT) for a push
SLOW_FIND_MS = 1000  # a find slower than this returns (and keeps) its lookup trace
CONNECT_TIMEOUT = 5.0


def _multiaddrs(texts: list[str]) -> list:
    """The ones of ``texts`` that parse as multiaddrs (a stored row is not trusted to)."""
    out = []
    for text in texts:
        try:
            out.append(multiaddr.Multiaddr(text))
        except Exception:  # the multiaddr package raises several types for a bad address
            continue
    return out


def _value_of(record) -> bytes:
    """The value of a local DHT store entry: py-libp2p keeps a signed Record (``.value``)."""
    return record.value if hasattr(record, "value") else record


class AnnounceCache:
    """The newest valid announce seen per DID, and when (monotonic seconds) a copy at least that
    new was last seen. Pure: time passed in; bounded (the oldest-seen entry goes first)."""

    def __init__(self, fresh_s: float = ANNOUNCE_FRESH_S, kept: int = ANNOUNCES_KEPT):
        self.fresh_s, self.kept = fresh_s, kept
        self._by_did: dict[str, tuple[Container, float]] = {}
        self._recorded: dict[str, str] = {}

    def heard(self, c: Container, now: float) -> None:
        held = self._by_did.get(c.sender_did)
        if held is not None and held[0].did != c.did and select_record([held[0], c]) == 0:
            return  # an older copy tells nothing new (and does not refresh the newer one)
        self._by_did.pop(c.sender_did, None)
        if len(self._by_did) >= self.kept:
            del self._by_did[next(iter(self._by_did))]
        self._by_did[c.sender_did] = (c, now)

    def recorded(self, did: str) -> str | None:
        """The container DID of ``did``'s announce last written to the peers table."""
        return self._recorded.get(did)

    def record(self, did: str, announce_did: str) -> None:
        if len(self._recorded) >= self.kept:
            self._recorded.clear()  # written again on the next lookup: a bound, not a loss
        self._recorded[did] = announce_did

    def newest(self, did: str) -> Container | None:
        """The newest announce of ``did`` held, however long ago it was seen."""
        held = self._by_did.get(did)
        return held[0] if held is not None else None

    def fresh(self, did: str, now: float) -> Container | None:
        held = self._by_did.get(did)
        return held[0] if held is not None and now - held[1] <= self.fresh_s else None

    def __len__(self) -> int:
        return len(self._by_did)


class Discovery:
    """The discovery service: ``run`` dials the bootstrap peers and keeps this node's announce in
    the DHT (and pushed to new peers, ``PeerEvents.identified``); ``find``, ``reach``, ``dial``,
    ``lookup_announce``, ``find_interest``, ``ping``, ``announce_now`` for the rest of the node;
    ``register`` gives the DHT its announce validator. Our own dials pass ``gating.refuse_dial``
    first. Settings: the announce's ``name``, ``interests``, ``expertise``, ``roles``; the
    ``bootstrap`` peers; ``maintenance_s`` between rounds (after a fast start)."""

    def __init__(self, parts: Libp2pParts, key, store, gating, events: PeerEvents, metrics,
                 clock: Callable[[], int], *, name: str, bootstrap: list[BootstrapPeer], maintenance_s: float,
                 interests: list[str] = (), expertise: list[str] = (), roles: list[str] = (),
                 fresh_s: float = ANNOUNCE_FRESH_S):
        self.parts, self.key, self.store, self.gating = parts, key, store, gating
        self.metrics, self.clock = metrics, clock
        self.name, self.bootstrap, self.maintenance_s = name, bootstrap, maintenance_s
        self.interests, self.expertise, self.roles = list(interests), list(expertise), list(roles)
        self.announces = AnnounceCache(fresh_s)  # the newest valid announce seen per DID
        self.lookup_log = lookup_trace.LookupLog()
        self._announce: Container | None = None
        self._agent_tags: tuple[list[str], list[str]] = ([], [])  # interests, expertise the mind announced
        self._cadence = MaintenanceCadence() if libp2p_fixes.idle_fixes_on() else MaintenanceCadence(0)
        self._looked_up: dict[str, int] = {}  # DID -> when its announce was last looked up
        self._push_wanted = trio.Event()  # a peer was identified: tell it this node's announce soon
        self._pushed_content: tuple | None = None  # the announce content last pushed to connected peers
        self._pushed_to: set = set()  # the peers it reached (or refused it)
        self._pushing: set = set()  # peers a push of the current content is waiting for
        self._arrivals: dict[str, set[trio.Event]] = {}  # DID -> the events of the lookups waiting for its announce
        events.on_identified(self._push_soon)
        events.on_upkeep(self._forget_looked_up)

    @property
    def host(self):
        return self.parts.host

    @property
    def dht(self):
        return self.parts.dht

    def register(self, dht) -> None:
        dht.register_validator(NAMESPACE, _announce_validator(self))

    def addresses(self) -> list[str]:
        """The node's announced addresses, each ending in /p2p/<peer id>."""
        return [str(a) for a in self.host.get_addrs()] if self.host else []

    def _push_soon(self, did: str, conn, nursery) -> None:
        """A connection was identified: the peer is told this node's announce within PUSH_GATHER_S."""
        self._push_wanted.set()

    def lookup_state(self) -> dict:
        """For the ``formation`` control call: this node's announce pushes and puts, when it first
        heard each DID's announce, and its slow finds' traces (lookup_trace)."""
        return self.lookup_log.as_dict()

    def _note_put(self, timed_out: bool, began: float) -> None:
        self.lookup_log.puts.append((lookup_trace.wall_ms(), "timeout" if timed_out else "done",
                                     round((time.perf_counter() - began) * 1000)))

    def _forget_looked_up(self, now: int, connected: set[str]) -> None:
        """Upkeep: lookups older than ANNOUNCE_RECHECK_MS are done again anyway."""
        self._looked_up = {d: t for d, t in self._looked_up.items() if now - t < ANNOUNCE_RECHECK_MS}

    def _heard_announce(self, c: Container) -> None:
        """Called by the DHT validator for every valid announce this node sees."""
        self.announces.heard(c, time.monotonic())
        self.lookup_log.heard(c.sender_did)
        for arrived in self._arrivals.pop(c.sender_did, ()):
            arrived.set()  # the lookups waiting for this DID's announce (pushed here meanwhile)

    async def _push_announce(self, announce: Container) -> None:
        """PUT the announce to every connected peer it has not reached yet (all again when its
        content changed): one round trip, where the DHT walk of put_value may take many."""
        content = (announce.payload, self.key.did)
        if content != self._pushed_content or len(self._pushed_to) > ANNOUNCES_KEPT:  # changed, or a bound
            self._pushed_content, self._pushed_to, self._pushing = content, set(), set()
        pushed = self._pushed_to  # this content's set: a push of newer content meanwhile starts another
        pushing = self._pushing  # peers a push of this content is still waiting for: not asked twice
        connected = set(self.host.get_connected_peers())
        # and the routing table's peers closest to the record key (dialled), the ones a walk for it
        # asks: a put_value walk took ~10 s while a mesh formed, so finds asked meanwhile found the
        # announce nowhere but at its owner (find p99 ~10 s at 20 processes; find-tail)
        closest = set(self._closest_known(record_key(self.key.did), PUSHED_AT_ONCE))
        pushed &= connected | closest  # a peer that left may come back with an empty store: told again then
        peers = [p for p in connected if p not in pushed and p not in pushing]
        peers = (peers + [p for p in closest - connected if p not in pushed and p not in pushing])[:PUSHED_AT_ONCE]
        if not peers:
            return
        pushing.update(peers)
        try:
            stored = await dht_direct.put_value_to_peers(self.dht, record_key(self.key.did), announce.to_bytes(),
                                                         peers)
        finally:
            pushing.difference_update(peers)
        self.lookup_log.pushes.append((lookup_trace.wall_ms(), len(peers), len(stored)))
        pushed.update(stored)  # the others (slow, gone) are asked again next round
        self.metrics.inc("announce_pushed", len(stored))

    def _closest_known(self, key: str, count: int, exclude=()) -> list:
        if not hasattr(self.dht, "routing_table"):
            return []
        return dht_direct.closest_known(self.dht, key, count, exclude)

    async def _push_on_connect(self) -> None:
        """Tell each newly identified peer this node's announce within PUSH_GATHER_S, not at the next
        maintenance round: finds asked while a mesh forms waited out the whole lookup (10 s) when
        none of the connected peers held the announce yet (find p99 ~10 s at 20 processes)."""
        async def push(announce: Container) -> None:
            with trio.move_on_after(15):
                await self._push_quietly(announce)

        async with trio.open_nursery() as nursery:
            while True:
                await self._push_wanted.wait()
                await trio.sleep(PUSH_GATHER_S)  # connections come in bursts: one push for all of them
                self._push_wanted = trio.Event()
                if self._announce is not None:
                    # not awaited: one slow or vanished peer held each push up to the hop timeout (5 s),
                    # and the peers identified meanwhile waited for it (a target's announce reached
                    # nobody for 8 s while a mesh formed: find-tail); peers in flight are not asked twice
                    nursery.start_soon(push, self._announce)

    async def _push_quietly(self, announce: Container) -> None:
        try:
            await self._push_announce(announce)
        except Exception as exc:  # a peer gone mid-push: the next round asks again
            log.info("announce push: %s: %s", type(exc).__name__, exc)

    async def _dial_bootstrap(self) -> int:
        """Dial every bootstrap peer at once; how many are connected."""
        from libp2p.peer.id import ID
        from libp2p.peer.peerinfo import PeerInfo

        reached = 0

        async def dial(peer) -> None:
            nonlocal reached
            pid = ID.from_base58(peer.peer_id)
            if pid in self.host.get_connected_peers():
                reached += 1
                return
            try:
                await self._connect(PeerInfo(pid, [multiaddr.Multiaddr(peer.addr)]))
            except NetError as exc:
                log.info("bootstrap peer %s (line %d) unreachable: %s", peer.addr, peer.line, exc.reason)
                return
            reached += 1
            await libp2p_fixes.wait_identified(self.host, pid, timeout=2.0)  # add_peer is False before
            try:
                await self.dht.add_peer(pid)
            except Exception as exc:
                log.info("adding bootstrap peer %s to the DHT: %s", peer.peer_id, exc)
            await self.store.write(upsert_peer, peer.did, peer_id=peer.peer_id, now_ms=self.clock(),
                                   source="bootstrap", addresses=[peer.addr], online=True)

        async with trio.open_nursery() as nursery:
            for peer in self.bootstrap:
                if peer.peer_id != self.key.peer_id:
                    nursery.start_soon(dial, peer)
        return reached

    async def _learn_routing_table(self) -> None:
        """Record the announce of routing-table peers not looked up lately, or whose newer announce
        was pushed here since (a peer renamed and restarted: field run of issue 35, its new name
        waited 10 minutes), in the peers table (agent_peers): from the cache when fresh, else by
        lookup, ``LEARNING_AT_ONCE`` at a time."""
        now = self.clock()
        limiter = trio.CapacityLimiter(LEARNING_AT_ONCE)

        async def learn(did: str) -> None:
            async with limiter:
                with trio.move_on_after(5):
                    try:
                        await self.lookup_announce(did)
                    except MeshnodeError:  # not found, or a busy store: try again in a minute
                        self._looked_up[did] = now - ANNOUNCE_RECHECK_MS + 60_000

        async with trio.open_nursery() as nursery:
            for pid in list(self.dht.routing_table.get_peer_ids()):
                try:
                    did = peer_id_to_did(pid.to_base58())
                except MeshnodeError:
                    continue
                newest = self.announces.newest(did)  # pushed here since (a restart, a new name)
                unrecorded = newest is not None and self.announces.recorded(did) != newest.did
                if not unrecorded and now - self._looked_up.get(did, -ANNOUNCE_RECHECK_MS) < ANNOUNCE_RECHECK_MS:
                    continue
                self._looked_up[did] = now
                nursery.start_soon(learn, did)

    async def lookup_announce(self, did: str, *, cached: bool = True) -> Container:
        """The newest announce of ``did``: a copy seen in the last ``fresh_s`` (``cached``), else from
        the DHT (not from the local store alone). NetError not_found within LOOKUP_TIMEOUT."""
        announce = self.announces.fresh(did, time.monotonic()) if cached else None
        if announce is not None:
            self.metrics.inc("announce_lookups", via="cache")
            trace = lookup_trace.CURRENT.get()
            if trace is not None:
                trace.note(via="cache")
        else:
            announce = await self._walk_for_announce(did)
        if self.announces.recorded(did) != announce.did:  # the peers table holds an older one, or none
            await self.store.write(upsert_peer, did, peer_id=did_to_peer_id(did), now_ms=self.clock(),
                                   source="discovery", name=announce.payload["name"],
                                   addresses=announce_addresses(announce), announce_did=announce.did,
                                   interests=announce.payload.get("interests", []))
            self.announces.record(did, announce.did)
        return announce

    async def _walk_for_announce(self, did: str) -> Container:
        key = record_key(did)
        # get_value answers from a local copy without asking: set it aside for the walk, and put it
        # back when the walk stored nothing newer. Dropped for good, a dead peer's announce was gone
        # from every node that had looked it up, and each later lookup logged "Value not found".
        kept = self.dht.value_store.store.pop(key.encode(), None) if did != self.key.did else None
        try:
            return await self._walk_without_local_copy(did, key)
        finally:
            if kept is not None:
                self._put_back(key, kept)

    def _put_back(self, key: str, kept: tuple) -> None:
        """The copy set aside for a walk, back in the local store unless the walk stored a newer one
        there meanwhile (an older one it stored gives way to the copy)."""
        store = self.dht.value_store.store
        now = store.get(key.encode())
        if now is not None and now is not kept:
            try:
                if self.dht.validator.select(key, [_value_of(kept[0]), _value_of(now[0])]) == 1:
                    return  # the walk's is the newer
            except Exception:  # a copy that no longer validates (expired meanwhile): the walk's stays
                return
        store[key.encode()] = kept

    async def _walk_without_local_copy(self, did: str, key: str) -> Container:
        if hasattr(self.dht, "peer_routing"):
            lookup_trace.trace_dht_requests(self.dht)
        trace = lookup_trace.CURRENT.get()
        value, arrived = None, None
        found: list[tuple] = []  # what the last stage found: kept when the deadline cancels its wind-down
        try:
            with trio.fail_after(LOOKUP_TIMEOUT):
                # the connected peers first (one round trip; in a small mesh they hold it), then a walk
                asked = dht_direct.closest_connected(self.host, key, ASKED_AT_ONCE)
                owner = peer_id_object(did)
                owner_connected = owner in self.host.get_connected_peers()
                owner_known = owner_connected or bool(self._owner_addresses(owner))
                if owner not in asked and owner_known and did != self.key.did:
                    # it holds its own announce from its first second on, when nobody else does yet;
                    # not connected, it is dialled (a find connects to it next anyway)
                    asked.append(owner)
                if trace is not None:
                    trace.stage = "connected"
                    trace.note(connected=len(self.host.get_connected_peers()), asked=len(asked),
                               owner_connected=owner_connected, owner_known=owner_known)
                arrived = self._arrival(did)
                values = await dht_direct.get_value_from_peers(self.dht, key, asked, LOOKUP_QUORUM, owner=owner)
                if values:
                    value, via = values[self.dht.validator.select(key, values)], "connected"
                else:
                    value, via = await self._search_or_arrival(did, key, asked, arrived, found)
                if value is not None:
                    self.metrics.inc("announce_lookups", via=via)
        except Exception as exc:
            if trace is not None:
                trace.note(lookup_error=type(exc).__name__, lookup_ended=trace.at())
            if not found:
                raise NetError("not_found", f"no announce for {did}: {type(exc).__name__}") from None
            # found just before the deadline, which then cancelled the other requests' wind-down
            # (their closes under load): the announce is no less valid for it
            value = found[0][0]
            self.metrics.inc("announce_lookups", via=found[0][1])
        finally:
            if arrived is not None:
                self._arrival_done(did, arrived)
        if value is None:
            raise NetError("not_found", f"no announce for {did} in the DHT")
        try:
            announce = validate_record(key, value, self.clock())
        except RecordError as exc:
            self.metrics.inc("announce_rejected", code=exc.code)
            raise NetError("bad_announce", f"the announce found for {did} is invalid: {exc.reason}") from None
        self._heard_announce(announce)
        # a peer may answer with an older copy it kept (validly signed, replayed): never go back
        # from an announce already verified (a revocation, new addresses) to an older one
        newest = self.announces.newest(did)
        return newest if newest is not None and select_record([announce, newest]) == 1 else announce

    def _arrival(self, did: str) -> trio.Event:
        """An event of this lookup's own, set when ``did``'s announce is next heard (pushed here, or
        an answer); ``_arrival_done`` when the lookup ends. One per lookup: a lookup that ended
        removed a shared one, and another lookup of the same DID was never woken."""
        if len(self._arrivals) >= ANNOUNCES_KEPT:
            self._arrivals.clear()  # lookups waiting end by their deadline: a bound, not a loss
        arrived = trio.Event()
        self._arrivals.setdefault(did, set()).add(arrived)
        return arrived

    def _arrival_done(self, did: str, arrived: trio.Event) -> None:
        waiting = self._arrivals.get(did)
        if waiting is not None:
            waiting.discard(arrived)
            if not waiting:
                del self._arrivals[did]

    async def _search_or_arrival(self, did: str, key: str, asked: list, arrived: trio.Event,
                                 found: list) -> tuple:
        """No connected peer had it: the routing table's closest to the key in one round, then a
        walk; meanwhile (and up to ARRIVAL_WAIT_S after both came back empty) the announce may be
        pushed here by its owner, which a mesh forming does within seconds. Without waiting for it,
        ~2 % of the finds asked while 20 processes formed a mesh ended with no announce after the
        whole 10 s: it was held by its owner alone when asked (find-tail). (value, via), also
        appended to ``found`` as soon as known."""
        trace = lookup_trace.CURRENT.get()

        async def search() -> None:
            closest = self._closest_known(key, ASKED_AT_ONCE, exclude=asked)
            if trace is not None:
                trace.stage = "closest"
            values, via = await dht_direct.get_value_from_peers(self.dht, key, closest, LOOKUP_QUORUM), "closest"
            if not values:
                if trace is not None:
                    trace.stage = "walk"
                    trace.note(walk_from=trace.at())
                value = await self.dht.get_value(key, quorum=LOOKUP_QUORUM)
                values, via = ([value] if value is not None else []), "walk"
            if values:
                found.append((values[self.dht.validator.select(key, values)], via))
                nursery.cancel_scope.cancel()
            else:
                with trio.move_on_after(ARRIVAL_WAIT_S):
                    await trio.sleep_forever()
                nursery.cancel_scope.cancel()

        async def wait() -> None:
            await arrived.wait()
            newest = self.announces.newest(did)
            if newest is not None:
                found.append((newest.to_bytes(), "heard"))
                if trace is not None:
                    trace.note(heard_at=trace.at())
                nursery.cancel_scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(search)
            nursery.start_soon(wait)
        return found[0] if found else (None, "walk")

    def _owner_addresses(self, owner) -> list:
        return self._known_addresses(owner) if self.host is not None else []

    async def _newer_announce(self, did: str, announce: Container | None) -> Container | None:
        """An announce of ``did`` newer than the cached ``announce`` whose addresses did not answer,
        from the DHT; None when there is none (or there was no announce to begin with)."""
        if announce is None:
            return None
        try:
            newer = await self.lookup_announce(did, cached=False)
        except NetError:
            return None
        newer_than = newer.did != announce.did and select_record([announce, newer]) == 1
        return newer if newer_than and announce_addresses(newer) else None

    async def find(self, did: str) -> dict:
        """Find a peer by DID: its announce, its addresses, a connection; NetError not_found (or
        unreachable) within about LOOKUP_TIMEOUT + the connect timeout. A slow one (or one that found
        no announce) carries its lookup trace (lookup_trace) as ``trace``."""
        trace = lookup_trace.LookupTrace(did)
        token = lookup_trace.CURRENT.set(trace)
        try:
            answer = await self._find_traced(did, trace)
        except NetError as exc:
            trace.note(error=exc.code, ended=trace.at())
            self.lookup_log.slow.append(trace.as_dict())
            raise
        finally:
            lookup_trace.CURRENT.reset(token)
        if answer["elapsed_ms"] > SLOW_FIND_MS or answer["name"] is None:
            trace.note(ended=trace.at())
            answer["trace"] = trace.as_dict()
            self.lookup_log.slow.append(answer["trace"])
        return answer

    async def _find_traced(self, did: str, trace: lookup_trace.LookupTrace) -> dict:
        from libp2p.peer.id import ID
        from libp2p.peer.peerinfo import PeerInfo

        started = time.perf_counter()
        pid = ID.from_base58(did_to_peer_id(did))
        deadline = trio.current_time() + LOOKUP_TIMEOUT
        announce = None
        try:
            announce = await self.lookup_announce(did)
        except NetError as exc:
            log.info("announce lookup for %s: %s", did, exc.reason)
        trace.note(announce=announce is not None, looked_up=trace.at())
        if announce is not None and announce.payload.get("key_is_falsified"):
            raise NetError("revoked", f"{did} has revoked its key (key_is_falsified): not routing to it")
        addrs = announce_addresses(announce) if announce else []
        looked_up_ms = (time.perf_counter() - started) * 1000
        if pid not in self.host.get_connected_peers():
            info = None
            if addrs:
                info = PeerInfo(pid, [multiaddr.Multiaddr(a) for a in addrs])
            else:
                trace.stage = "find_peer"
                with trio.move_on_at(max(deadline, trio.current_time() + 1.0)):
                    info = await self.dht.find_peer(pid)
                trace.note(route=info is not None, routed=trace.at())
            if info is None:  # alone after a restart (nobody to ask): the addresses it last knew
                stored = _multiaddrs(await self.store.read(last_known_addresses, did))
                if stored:
                    trace.note(last_known=len(stored))
                    info = PeerInfo(pid, stored)
            if info is None:
                self.metrics.inc("find_not_found")
                raise NetError("not_found", f"{did} is not in the mesh (no announce, no route)")
            trace.stage = "connect"
            try:
                await self._connect(info)
            except NetError:
                newer = await self._newer_announce(did, announce)
                if newer is None:
                    raise
                announce, addrs = newer, announce_addresses(newer)  # it moved (a restart on new ports)
                await self._connect(PeerInfo(pid, [multiaddr.Multiaddr(a) for a in addrs]))
        if not addrs:  # no announce (yet): the addresses the route or the connection gave us
            addrs = self._known_addresses(pid)
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.metrics.observe("find_seconds", elapsed_ms / 1000)
        return {"did": did, "peer_id": pid.to_base58(), "name": announce.payload["name"] if announce else None,
                "addresses": addrs, "connected": True, "elapsed_ms": round(elapsed_ms, 2),
                "lookup_ms": round(looked_up_ms, 2)}

    # --- joining and announcing ---------------------------------------------------

    async def run(self) -> None:
        """Join the mesh and keep this node's announce published; push it to peers as they are identified."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._push_on_connect)
            await self._bootstrap_and_maintain()

    async def _bootstrap_and_maintain(self) -> None:
        delay = pause = 1.0
        while True:
            reached = await self._dial_bootstrap()
            if self.bootstrap and not reached and not self.host.get_connected_peers():
                log.warning("no bootstrap peer reachable (of %d); retrying in %.0f s",
                            len(self.bootstrap), delay)
                self.metrics.inc("bootstrap_unreachable")
                await trio.sleep(delay)
                delay = min(delay * 2, 60.0)
                continue
            delay = 1.0
            table = frozenset(p.to_base58() for p in self.dht.routing_table.get_peer_ids())
            content = (tuple(self.addresses()), tuple(self._agent_tags[0]), tuple(self._agent_tags[1]))
            if self._cadence.due(self.clock(), table, content):  # issue 18: only on changes, or now and then
                # the announce first: its put walks towards this node's own neighbourhood, which also
                # fills the routing table, and makes the node findable as soon as it has a peer
                published = await self._publish_announce()
                if self.host.get_connected_peers():
                    with trio.move_on_after(30):
                        try:
                            await self.dht.refresh_routing_table()
                        except Exception as exc:  # peers come and go mid-refresh; the next round retries
                            log.info("routing table refresh: %s: %s", type(exc).__name__, exc)
                if published:  # a failed put is tried again next round
                    self._cadence.done(self.clock(), table, content)
            elif self._announce is not None:  # peers that connected since, or were too slow, get it directly
                with trio.move_on_after(15):
                    await self._push_quietly(self._announce)
            await self._learn_routing_table()
            self.metrics.inc("maintenance_rounds")
            # soon after start the mesh changes fast: look again after 1, 2, 4 ... s, then every maintenance_s
            await trio.sleep(jittered(min(pause, self.maintenance_s)))
            pause *= 2

    async def _connect(self, info) -> None:
        self.gating.refuse_dial(info.peer_id)
        network = self.host.get_network()
        if hasattr(network, "unblock_peer"):
            network.unblock_peer(info.peer_id)  # a failed dial blocks the peer for 60 s otherwise
        try:
            with trio.fail_after(CONNECT_TIMEOUT):
                await self.host.connect(info)
        except (trio.TooSlowError, Exception) as exc:  # libp2p raises several types on a failed dial
            self.metrics.inc("dial_failed")
            raise NetError("unreachable", unreachable(info, exc)) from None

    async def announce_now(self, interests: list[str] = (), expertise: list[str] = ()) -> dict:
        """Publish this node's announce at once, with interests and expertise the cognitive core
        adds to the configured ones (for this run)."""
        self._agent_tags = (sorted(set(self._agent_tags[0]) | set(interests))[:64],
                            sorted(set(self._agent_tags[1]) | set(expertise))[:64])
        await self._publish_announce()
        p = self._announce.payload
        return {"did": self.key.did, "interests": p.get("interests", []), "expertise": p.get("expertise", []),
                "addresses": p.get("addresses", [])}

    async def _publish_announce(self) -> bool:
        interests = [*self.interests, *self._agent_tags[0]]
        expertise = [*self.expertise, *self._agent_tags[1]]
        announce = make_announce(self.key, name=self.name, addresses=self.addresses(), now_ms=self.clock(),
                                 interests=interests, expertise=expertise, roles=self.roles)
        self._announce = announce
        try:
            self.dht.value_store.put(record_key(self.key.did).encode(), announce.to_bytes())
            await self._push_announce(announce)  # the connected peers first, at once (mesh_lookup)
            put_began = time.perf_counter()
            with trio.move_on_after(15) as put:
                await self.dht.put_value(record_key(self.key.did), announce.to_bytes())
            self._note_put(put.cancelled_caught, put_began)  # find-tail (lookup_trace)
            for tag in announce.payload.get("interests", []):
                with trio.move_on_after(15):
                    await self.dht.provide(interest_key(tag))
        except Exception as exc:  # the DHT may have no peers yet; the next round retries
            log.info("announce not published yet: %s", exc)
            self.metrics.inc("announce_failed")
            return False
        if put.cancelled_caught:  # the walk outlasted its deadline: the record may have reached nobody
            log.info("announce put timed out; tried again next round")
            self.metrics.inc("announce_failed")
            return False
        return True

    async def dial(self, did: str, addresses: list[str]) -> None:
        """Connect to ``did`` at addresses already known (a spawned child's): no lookup; NetError
        ``unreachable`` when none answers."""
        from libp2p.peer.id import ID
        from libp2p.peer.peerinfo import PeerInfo

        await self._connect(PeerInfo(ID.from_base58(did_to_peer_id(did)), [multiaddr.Multiaddr(a) for a in addresses]))

    async def reach(self, did: str) -> None:
        """Be connected to ``did``: at once when we already are, else by ``find``."""
        if peer_id_object(did) not in self.host.get_connected_peers():
            await self.find(did)

    def _known_addresses(self, pid) -> list[str]:
        from libp2p.peer.peerstore import PeerStoreError

        try:
            return [str(a) for a in self.host.get_peerstore().addrs(pid)]
        except PeerStoreError:
            return []

    async def find_interest(self, tag: str) -> list[dict]:
        providers = await libp2p_dht_fixes.find_providers_network(self.dht, interest_key(tag))
        found = []
        for pid in sorted(providers, key=lambda p: p.to_base58()):
            try:
                did = peer_id_to_did(pid.to_base58())
            except MeshnodeError:
                continue
            found.append({"did": did, "peer_id": pid.to_base58()})
        return found

    async def ping(self, did: str) -> float:
        from libp2p.host.ping import ID as PING_ID, perform_ping_roundtrip

        pid = peer_id_object(did)
        for last in (False, True):  # a connection that closed as the ping began (the peer just stopped, and
            await self.find(did)  # py-libp2p still lists it): dropped, and the peer looked for afresh
            try:
                stream = await self.host.new_stream(pid, [PING_ID])
                break
            except Exception as exc:  # py-libp2p raises several types when a peer is gone
                if last:
                    raise NetError("unreachable", f"peer {did} is unreachable: its connection closed before the"
                                                  f" ping ({_leaf(exc)})") from None
                try:
                    await self.host.disconnect(pid)
                except Exception as gone:
                    log.debug("dropping the closed connection to %s: %s", did, gone)
        try:
            started = time.perf_counter()
            with trio.fail_after(REQUEST_TIMEOUT):
                await perform_ping_roundtrip(stream)
            return (time.perf_counter() - started) * 1000
        finally:
            await stream.close()


def unreachable(info, exc: BaseException) -> str:
    """A person's sentence for a dial that failed: who, which addresses were tried, and why (py-libp2p's
    ``SwarmDialAllFailedError`` names neither the addresses nor the reason)."""
    try:
        who = peer_id_to_did(info.peer_id.to_base58())
    except MeshnodeError:
        who = str(info.peer_id)
    addresses = [str(a).split("/p2p/")[0] for a in info.addrs]  # the DID names the peer
    tried = ", ".join(addresses[:8]) + (f" and {len(addresses) - 8} more" if len(addresses) > 8 else "")
    if isinstance(exc, trio.TooSlowError):
        why = f"no answer within {CONNECT_TIMEOUT:g} s"
    else:
        why = _leaf(exc)
    if not tried:
        return f"peer {who} is unreachable: no address of it is known ({why})"
    return f"peer {who} is unreachable: tried {tried} ({why})"


def _leaf(exc: BaseException) -> str:
    """The innermost reason of a libp2p failure, short: an operating system's reason ("connection
    refused") when one is in the chain (libp2p wraps it in several errors and groups of them)."""
    chain = [exc]
    while len(chain) < 12:
        last = chain[-1]
        group = getattr(last, "errors", None) or getattr(last, "exceptions", None)  # libp2p's MultiError, groups
        inner = group[0] if isinstance(group, (list, tuple)) and group else (last.__cause__ or last.__context__)
        if not isinstance(inner, BaseException) or inner in chain:
            break
        chain.append(inner)
    for found in reversed(chain):
        if isinstance(found, OSError) and found.strerror:  # trio's: "Error connecting to (...): Connection refused"
            return found.strerror.rsplit(": ", 1)[-1].lower()
    return " ".join(str(chain[-1]).split())[:160] or type(chain[-1]).__name__


def _announce_validator(discovery: Discovery):
    """The DHT namespace validator for announces (libp2p calls validate/select)."""
    from libp2p.records.validator import Validator

    class AnnounceValidator(Validator):
        def validate(self, key: str, value: bytes) -> None:
            try:
                announce = validate_record(key, value, discovery.clock())
            except RecordError as exc:
                discovery.metrics.inc("announce_rejected", code=exc.code)
                raise ValueError(f"{exc.code}: {exc.reason}") from None
            discovery._heard_announce(announce)  # a PUT from its owner, an answer to a lookup: fresh (mesh_lookup)

        def select(self, key: str, values: list[bytes]) -> int:
            if len(values) > 1 and all(v == values[0] for v in values):
                # the same record again: py-libp2p answers a PUT only when the new one wins, so an
                # unanswered push of what a peer already held waited out the hop timeout and was
                # retried every maintenance round, by every node (idle cost after issue 18's find-tail)
                return len(values) - 1
            decoded = []
            for v in values:
                try:
                    decoded.append(validate_record(key, v, discovery.clock()))
                except RecordError:
                    decoded.append(None)
            valid = [i for i, c in enumerate(decoded) if c is not None]
            if not valid:
                return 0
            return valid[select_record([decoded[i] for i in valid])]

    return AnnounceValidator()
