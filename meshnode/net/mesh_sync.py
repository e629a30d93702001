"""Sync sessions (``/meshnode/sync/2.0.0``, and 1.0.0 for older peers: notes and CogSync): the ``SyncSessions`` service.

Versions: a node serves both protocols; each names its reconciliation format
(``Session.version``). The initiator opens 2.0.0 and, when the peer does not
speak it (identify, or multistream's refusal), 1.0.0: an older node gets the
format it knows, and a stream never carries the other format's messages (one
that did would be refused with a typed ``bad_sync``).

One stream per session; each message is a varint-framed deterministic-CBOR
map (``meshnode.domain.sync.session``). Each side offers only what it may share with
the other (``store.sharing``), so nothing private is ever named, and takes
only what its [sync] settings want. When the session ends, each side pushes
what the other lacks and wants, and fetches what it lacks and wants, over the
exchange protocol, which checks sharing again. The side with the smaller DID
starts a session; a responder whose want differs gets a second pass in it.
Format 2 indexes the catalog; the node keeps the last index and each session
updates it from its own catalog (``sync.index_cache``: a million ids cost a
second to index from scratch, a pass to update).

Under load: a responder serves at most ``sync_sessions`` sessions of unknown
peers at once (known peers are not counted against it, so strangers cannot
take every slot) and ``sync_sessions_per_peer`` per peer; each frame must
arrive within ``frame_timeout_s`` plus the time its announced length takes at
``MIN_FRAME_RATE`` (a stream that trickles bytes is reset, and counted invalid
for an unknown peer), and each frame is charged to the peer and worked on off
the loop when large.
"""

from __future__ import annotations

import base64
import logging
from typing import Awaitable, Callable

import trio

from meshnode.base.container import cbor
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net import libp2p_fixes
from meshnode.net.addresses import AddressGuard
from meshnode.net.errors import NetError
from meshnode.net.events import MeshHooks, PeerEvents
from meshnode.net.frames import encode_frame, sent
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.liveness import Liveness, LivenessTracker
from meshnode.net.not_wanted import NotWanted
from meshnode.net.paced_read import MIN_FRAME_RATE, read_paced_frame
from meshnode.net.peer_guard import PeerGuard, Refused, WorkFailed, peer_id_object, remote_host
from meshnode.net.standing import Standing
from meshnode.store.known import KnownAuthors
from meshnode.store.peers import peer_trust
from meshnode.store.sharing import friends, shareable
from meshnode.domain.sync.index_cache import IndexCache
from meshnode.domain.sync.reconcile import ReconcileError
from meshnode.domain.sync.selective import NOTHING, Want
from meshnode.domain.sync.session import INITIATOR, RESPONDER, Entry, Session

log = logging.getLogger("meshnode.net")

SYNC_PROTOCOL_ID = "/meshnode/sync/2.0.0"  # reconciliation format 2 (meshnode.domain.sync.rbsr)
SYNC_PROTOCOL_V1 = "/meshnode/sync/1.0.0"  # format 1 (meshnode.domain.sync.reconcile), for nodes that predate 2
SYNC_VERSIONS = {SYNC_PROTOCOL_ID: 2, SYNC_PROTOCOL_V1: 1}
SYNC_TIMEOUT = 60.0
SESSION_BUDGET = 30.0  # a periodic session, reconciliation and transfer together
STUCK_AFTER = 2 * SESSION_BUDGET  # a job still running this long ignored its own timeouts
OVERDUE_ROUNDS = 5  # sync rounds without a completed session before the other side starts one too
# One sync message. Sized for sets of 100k items (bench/sync.py) differing by anything up to all
# of them: the largest frame measured is 3.7 MB with 157k data items (ids listed in full, 29 bytes
# per item). The item limit bounds the decode of any frame to 0.2-0.3 s whatever its bytes hold
# (a frame of empty arrays is one item per byte: at the old 40 MiB limit, over a minute). Sets of
# several hundred thousand items with scattered differences would need more (or the reconciler
# cutting its messages to fit).
# Format 2 needs far less: its largest frame is 25 KB at 100k items and 0.1%, 2.5 MB at 1M and 1%
# (bench/sync.py).
MAX_SYNC_FRAME = 8 * 1024 * 1024
MAX_SYNC_ITEMS = 256 * 1024
MAX_SYNC_DEPTH = 8  # message map, ranges list, range, ids list (the want: map, list)
BATCH = 64


async def _until_closed(stream) -> None:
    """Wait until the peer closes its side of ``stream`` (nothing more is expected on it)."""
    try:
        while await stream.read(MAX_SYNC_FRAME):
            pass
    except Exception:  # EOF, reset or a broken connection: closed in any case
        return


def _digest(container_did: str) -> bytes:
    raw = base64.urlsafe_b64decode(container_did.split(":")[-1][1:] + "==")
    return raw[2:]


class SyncSessions:
    """The sync service: ``sync_with`` a peer now, ``serve`` both versions of the protocol
    (registered by ``register``), ``run`` the rounds with every peer due. Streams are opened by the
    ``gating`` service, which also says what a peer speaks; what a session found missing moves over
    the ``exchange``; what comes in is stored by ``admission``; a session completed is credited to
    its peer by ``credit(did)``; goal audiences come from the GMP service through ``hooks``.
    Settings: ``want(now)`` what this node takes, ``min_trust`` below which a peer gets nothing
    taken from it, ``every_s`` between rounds, ``sessions`` and ``sessions_per_peer`` served at
    once, ``frame_timeout_s`` for a frame's prefix."""

    def __init__(self, parts: Libp2pParts, key, store, guard: PeerGuard, standing: Standing,
                 address_guard: AddressGuard, gating, reach: Callable[[str], Awaitable[None]], exchange, admission,
                 credit: Callable[[str], None], hooks: MeshHooks, liveness: LivenessTracker, known: KnownAuthors,
                 events: PeerEvents, metrics, clock: Callable[[], int], *, want: Callable[[int], Want],
                 min_trust: float, every_s: float, sessions: int, sessions_per_peer: int, frame_timeout_s: float):
        self.parts, self.key, self.store, self.guard, self.standing = parts, key, store, guard, standing
        self.address_guard, self.gating, self.reach, self.exchange = address_guard, gating, reach, exchange
        self.admission, self.credit, self.hooks, self.liveness = admission, credit, hooks, liveness
        self.known, self.metrics, self.clock = known, metrics, clock
        self.want, self.min_trust, self.every_s = want, min_trust, every_s
        self.sessions, self.sessions_per_peer, self.frame_timeout_s = sessions, sessions_per_peer, frame_timeout_s
        self._wanted = trio.Event()  # set when a peer appears or comes back: sync soon
        self._synced_at: dict[str, float] = {}  # DID -> when a session with it last completed (trio time)
        self._serving: dict[str, int] = {}  # DID -> inbound sync sessions now
        self._indexes = IndexCache()  # the last sync catalog's index, updated by the next (sync.index_cache)
        self._refused_by_peer = NotWanted()  # (peer, container DID) a peer's push ack refused over quota
        events.on_back(self._soon)
        events.on_upkeep(self._forget_synced)

    def _soon(self) -> None:
        """A peer appeared or came back: the next round starts now."""
        self._wanted.set()

    def register(self, host) -> None:
        host.set_stream_handler(SYNC_PROTOCOL_ID, libp2p_fixes.guarded_handler(self.serve, "sync"))
        host.set_stream_handler(SYNC_PROTOCOL_V1, libp2p_fixes.guarded_handler(self.serve_v1, "sync"))

    async def sync_with(self, did: str) -> dict:
        """Run one sync session with ``did`` now; returns what moved both ways: what this side
        pushed and fetched, and what the peer pushed here and fetched from here (the side that
        learned a difference moves it, and for a small set that is the responder)."""
        from libp2p.utils.varint import read_varint_prefixed_bytes_limited

        await self.reach(did)
        stream, version = await self._open_sync_stream(did)
        try:
            session, by_digest = await self._session_for(did, INITIATOR, version)
        except BaseException:
            await stream.reset()
            raise
        received_before, served_before = self.exchange.moved(did)
        started = trio.current_time()  # -> sync_session_seconds{role=initiator}
        try:
            with trio.fail_after(SYNC_TIMEOUT):
                for message in session.start():
                    await stream.write(sent(self.metrics, "sync", encode_frame(cbor.encode(message))))
                while not session.done:  # the responder's frames: no frame timeout (it may be busy)
                    frame = await read_varint_prefixed_bytes_limited(stream, MAX_SYNC_FRAME)
                    for message in await self._sync_step(did, None, session, frame, admit=False):
                        await stream.write(sent(self.metrics, "sync", encode_frame(cbor.encode(message))))
            result = await self._settle(did, session, by_digest)
            with trio.move_on_after(SYNC_TIMEOUT):  # the responder closes once its transfers are done
                await _until_closed(stream)
            await stream.close()
        except (trio.TooSlowError, ReconcileError, MeshnodeError):
            await stream.reset()
            raise
        except Exception as exc:
            await stream.reset()
            raise NetError("sync_failed", f"sync with {did} failed: {type(exc).__name__}") from None
        finally:
            self.metrics.observe("sync_session_seconds", trio.current_time() - started, role="initiator")
        received, served = self.exchange.moved(did)
        result["pushed"] += max(0, served - served_before)  # counts restart when the peer disconnects
        result["fetched"] += max(0, received - received_before)
        return result

    async def _open_sync_stream(self, did: str):
        """A stream in the newest sync format the peer speaks, and that format."""
        try:
            return await self.gating.open_stream(did, SYNC_PROTOCOL_ID), 2
        except NetError as exc:
            if exc.code != "unsupported":
                raise
        self.metrics.inc("sync_older_format")
        return await self.gating.open_stream(did, SYNC_PROTOCOL_V1), 1

    async def serve_v1(self, stream) -> None:
        await self.serve(stream, version=1)

    async def serve(self, stream, version: int = 2) -> None:
        did = peer_id_to_did(stream.muxed_conn.peer_id.to_base58())
        if self.standing.is_banned(did, self.clock()) or not self.standing.allow_message(did, self.clock()):
            self.metrics.inc("sync_refused", reason="banned_or_rate")
            await stream.reset()
            return
        host = None if self.guard.is_known(did) else remote_host(stream.muxed_conn)
        serving = self._serving
        strangers = sum(n for peer, n in serving.items() if not self.guard.is_known(peer))
        if (not self.guard.is_known(did) and strangers >= self.sessions) or \
                serving.get(did, 0) >= self.sessions_per_peer:  # known peers: outside the total
            self.metrics.inc("sync_refused", reason="sessions")
            await stream.reset()
            return
        busy = self.guard.begin_stream(did, host)  # streams of its address, and of all strangers
        if busy is not None:
            self.metrics.inc("sync_refused", reason=busy)
            await stream.reset()
            return
        serving[did] = serving.get(did, 0) + 1
        try:
            await self._serve_sync_session(did, host, stream, version)
        except Refused as exc:
            self.metrics.inc("sync_refused", reason=exc.code)
            await stream.reset()
        finally:
            serving[did] -= 1
            if not serving[did]:
                del serving[did]
            self.guard.end_stream(did, host)

    async def _serve_sync_session(self, did: str, host: str | None, stream, version: int) -> None:
        session, by_digest = await self._session_for(did, RESPONDER, version)
        started = trio.current_time()
        try:
            with trio.fail_after(SYNC_TIMEOUT):
                while not session.done:
                    frame = await self._read_sync_frame(did, stream)
                    for message in await self._sync_step(did, host, session, frame):
                        await stream.write(sent(self.metrics, "sync", encode_frame(cbor.encode(message))))
            try:
                await self._settle(did, session, by_digest)
            finally:
                await stream.close()  # after the transfers: the initiator waits for this to report them
        finally:
            self.metrics.observe("sync_session_seconds", trio.current_time() - started, role="responder")

    async def _read_sync_frame(self, did: str, stream) -> bytes:
        """One sync frame from an initiator, within ``frame_timeout_s`` plus its announced length at
        ``MIN_FRAME_RATE`` (a stream that trickles bytes, slow-loris, is cut; counted invalid when
        its peer is unknown)."""
        try:
            return await read_paced_frame(stream, MAX_SYNC_FRAME, self.frame_timeout_s)
        except trio.TooSlowError:
            self.guard.slow_frame(did)
            raise NetError("slow_frame", f"{did} sent one sync frame slower than {MIN_FRAME_RATE // 1024} KiB/s"
                           f" after {self.frame_timeout_s:.0f} s") from None

    async def _sync_step(self, did: str, host: str | None, session: Session, frame: bytes,
                         admit: bool = True) -> list:
        """Parse a frame and advance the session, charged to ``did`` and off the loop when large."""
        try:
            return await self.guard.work(did, host, frame, _receive, session, frame, admit=admit)
        except WorkFailed as exc:
            if not isinstance(exc.error, ReconcileError):
                raise exc.error
            self.guard.invalid(did, "bad_sync", cost_ms=exc.cost_ms, nbytes=len(frame))
            raise NetError("bad_sync", exc.error.args[0]) from None

    async def _session_for(self, did: str, role: str, version: int = 2) -> tuple[Session, dict[bytes, str]]:
        """What we may give ``did``, and what we take from it (the [sync] settings; nothing
        at all from a peer trusted less than sync.min_trust). Each container once in the catalog."""
        rows = await self.store.read(shareable, did, self.key.did)
        trust = await self.store.read(peer_trust, did)
        want = NOTHING if trust < self.min_trust else self.want(self.clock())
        by_digest: dict[bytes, str] = {}
        catalog = []
        for ts, d, cls, tags in rows:
            digest = _digest(d)
            if digest not in by_digest:
                by_digest[digest] = d
                catalog.append(Entry(ts, digest, cls, frozenset(tags)))
        return Session(role, catalog, want, version=version, indexes=self._indexes), by_digest

    async def _settle(self, did: str, session: Session, by_digest: dict[bytes, str]) -> dict:
        """Push what the peer lacks and wants, fetch what we lack and want."""
        have = [by_digest[d] for d in sorted(session.push) if d in by_digest]
        have = [d for d in have if (did, d) not in self._refused_by_peer]
        need = [_did_for(d) for d in sorted(session.fetch)]
        skipped = len(need)
        need = [d for d in need if d not in self.admission.not_wanted]  # refused or evicted here before
        if len(need) < skipped:
            self.metrics.inc("sync_not_fetched", skipped - len(need), reason="refused_before")
        pushed = fetched = 0
        for i in range(0, len(have), BATCH):
            batch = []
            for container_did in have[i: i + BATCH]:
                c = await self.store.read(lambda db, d=container_did: db.load_container(d, now_ms=self.clock()))
                if c is not None:
                    batch.append(c)
            if batch:
                ack = await self.exchange.push(did, batch)
                self.remember_refusals(did, batch, ack)
                pushed += len(batch)
                if ack.get("retry_ms") is not None:  # the peer is busy: the rest waits for the next session
                    self.metrics.inc("sync_push_deferred", len(have) - i - len(batch))
                    break
        for i in range(0, len(need), BATCH):
            got = await self.exchange.fetch(did, need[i: i + BATCH])
            for c in got:
                await self.admission.store_from_peer(c, did, "sync")
            fetched += len(got)
        self._synced_at[did] = trio.current_time()
        self.credit(did)
        self.metrics.inc("sync_sessions")
        if session.restarts:  # format 2: a short fingerprint collided and the pass started again
            self.metrics.inc("sync_restarts", session.restarts)
        self.metrics.inc("sync_pushed", pushed)
        self.metrics.inc("sync_fetched", fetched)
        return {"pushed": pushed, "fetched": fetched, "rounds": session.rounds, "passes": session.passes}

    def remember_refusals(self, did: str, batch: list, ack: dict) -> None:
        """Containers the peer refused over their author's quota, or at GMP admission (a peer whose
        rules differ from ours: pushing one again would only be counted against us), are not
        pushed to it again."""
        for item in ack.get("rejected", []) if isinstance(ack, dict) else []:
            index = item.get("index") if isinstance(item, dict) else None
            code = str(item.get("code")) if isinstance(item, dict) else ""
            if (code == "quota" or code.startswith("gmp_")) and isinstance(index, int) and 0 <= index < len(batch):
                self._refused_by_peer.add((did, batch[index].did), batch[index].sender_did)

    def _forget_synced(self, now: int, connected: set[str]) -> None:
        """Upkeep: when sessions with strangers no longer connected completed."""
        self._synced_at = {d: t for d, t in self._synced_at.items() if d in connected or d in self.known}

    async def run(self) -> None:
        """Sync with every connected peer, every friend and every peer sharing a goal with this
        node (GMP containers go to goal audiences, friends or not) now and then, and soon after a peer
        (re)appears. The smaller DID starts each session; a node reaches out to friends with
        smaller DIDs (connects) so that they can start theirs, and starts one itself when none
        has completed for OVERDUE_ROUNDS rounds. Peers that went quiet are left alone until they
        are heard again, and a slow peer holds up only its own session."""
        busy: dict[str, float] = {}  # DID -> when its running job started
        not_speaking: set[str] = set()  # peers (told once) that do not speak sync: a plain libp2p peer
        async with trio.open_nursery() as nursery:
            while True:
                with trio.move_on_after(self.every_s):
                    await self._wanted.wait()
                self._wanted = trio.Event()
                for did, since in list(busy.items()):
                    if trio.current_time() - since > STUCK_AFTER:  # past every timeout: the connection is wedged
                        del busy[did]
                        log.warning("sync with %s is stuck past its timeouts: renewing the connection", did)
                        self.metrics.inc("sync_stuck")
                        nursery.start_soon(self._one_at_a_time, busy, did, self._renew_connection)
                connected = set()
                for pid in list(self.parts.host.get_connected_peers()):
                    try:
                        connected.add(peer_id_to_did(pid.to_base58()))
                    except MeshnodeError:
                        continue
                mine = set(await self.store.read(friends)) | await self._goal_peers()
                overdue = trio.current_time() - OVERDUE_ROUNDS * self.every_s
                for did in sorted((connected | mine) - busy.keys()):
                    if self.liveness.state(did) in (Liveness.STALE, Liveness.DEAD) or self.guard.banned(did):
                        continue
                    if did in connected and self.gating.speaks(did, SYNC_PROTOCOL_ID) is False \
                            and self.gating.speaks(did, SYNC_PROTOCOL_V1) is False:
                        if did not in not_speaking:
                            log.debug("not syncing with %s: it does not speak %s", did, SYNC_PROTOCOL_ID)
                            not_speaking.add(did)
                        self.metrics.inc("sync_skipped", reason="unsupported")
                        continue
                    if did > self.key.did:
                        nursery.start_soon(self._one_at_a_time, busy, did, self._sync_quietly)
                    elif did not in connected:
                        nursery.start_soon(self._one_at_a_time, busy, did, self._reach_quietly)
                    elif self._synced_at.setdefault(did, trio.current_time()) < overdue:
                        # the peer should start our sessions but none has completed for a while
                        # (its streams to us may hang): start one ourselves
                        self.metrics.inc("sync_overdue")
                        nursery.start_soon(self._one_at_a_time, busy, did, self._sync_quietly)

    async def _goal_peers(self) -> set[str]:
        """Peers in the audience of a goal this node takes part in (none without GMP running)."""
        try:
            return await self.hooks.goal_peers()
        except MeshnodeError as exc:  # a busy store: the next round asks again
            log.info("listing goal audiences: %s", exc.reason)
            return set()

    @staticmethod
    async def _one_at_a_time(busy: dict[str, float], did: str, job) -> None:
        started = busy[did] = trio.current_time()
        try:
            await job(did)
        finally:
            if busy.get(did) == started:  # not a later job's mark
                del busy[did]

    async def _renew_connection(self, did: str) -> None:
        """Drop every connection to ``did`` and connect again (a job stuck on it stays behind)."""
        try:
            with trio.move_on_after(SESSION_BUDGET):
                await self.guard.disconnect(peer_id_object(did))
                await self.reach(did)
        except MeshnodeError as exc:
            log.info("reconnecting %s: %s", did, exc.reason)
        except Exception as exc:  # a background task must never take the node down
            log.warning("reconnecting %s failed unexpectedly: %s: %s", did, type(exc).__name__, exc)

    async def _reach_quietly(self, did: str) -> None:
        try:
            with trio.move_on_after(SESSION_BUDGET):
                await self.reach(did)
        except MeshnodeError as exc:
            log.info("reaching friend %s: %s", did, exc.reason)
        except Exception as exc:  # a background task must never take the node down
            log.warning("reaching friend %s failed unexpectedly: %s: %s", did, type(exc).__name__, exc)

    async def _sync_quietly(self, did: str) -> None:
        try:
            with trio.move_on_after(SESSION_BUDGET) as budget:
                await self.sync_with(did)
            if budget.cancelled_caught:
                conns = self.parts.host.get_network().connections.get(peer_id_object(did), [])
                log.info("sync with %s: no result within %.0f s (%d connections)", did, SESSION_BUDGET,
                         len(conns) if isinstance(conns, list) else 1)
                self.metrics.inc("sync_timeouts")
        except (MeshnodeError, ReconcileError) as exc:
            unsupported = getattr(exc, "code", None) == "unsupported"  # found out now; skipped from now on
            log.log(logging.DEBUG if unsupported else logging.INFO, "sync with %s: %s", did,
                    getattr(exc, "reason", exc))
        except Exception as exc:  # a background session must never take the node down
            log.warning("sync with %s failed unexpectedly: %s: %s", did, type(exc).__name__, exc)
            self.metrics.inc("sync_errors")


def _did_for(digest: bytes) -> str:
    from meshnode.base.container.model import CONTAINER_DID_PREFIX

    return CONTAINER_DID_PREFIX + base64.urlsafe_b64encode(b"\x12\x20" + digest).rstrip(b"=").decode("ascii")


def _receive(session: Session, frame: bytes) -> list:
    return session.receive(_parse(frame))


def _parse(frame: bytes):
    try:
        message, _ = cbor.decode(frame, max_bytes=MAX_SYNC_FRAME, max_depth=MAX_SYNC_DEPTH, max_items=MAX_SYNC_ITEMS)
    except MeshnodeError as exc:
        raise ReconcileError(f"sync message: {exc.reason}") from None
    return message
