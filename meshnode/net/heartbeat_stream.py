"""Heartbeats one hop, on a stream per direct connection: ``/meshnode/heartbeat/2``.

Why: gossiped mesh-wide, every heartbeat reached every node once per mesh peer,
so an idle node handled N x D heartbeats per interval (3.26 % of a core at 20
nodes, issue 18). Now a node tells only the peers it is connected to: once a
connection is identified it opens ONE long-lived stream to that peer and
writes a signed ``heartbeat`` container at once (the peer is ``ok`` within a
round trip), then one every ``heartbeat_ms`` (+-10 %). Nothing is relayed:
a node knows the liveness of the peers it is connected to.

Inbound, each frame (varint length, at most ``MAX_HEARTBEAT_BYTES``) must be a
valid container of class ``heartbeat`` signed by the stream's own peer;
anything else is invalid input (counted against the peer) and the stream is
reset. One inbound stream per peer: a second one *replaces* the first (after a
reconnect the new stream must win, and the old one may not have noticed yet
that its connection is gone); so a peer holds at most one reader task here.
The first frame must come within ``FIRST_FRAME_S``; a peer writing faster
than one heartbeat per ``heartbeat_ms / 4`` has the excess ignored undecoded
(``heartbeat_pace``).
"""

from __future__ import annotations

import logging
import math
from typing import Callable

import trio

from meshnode.base.container import ContainerError, Limits, build_container, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net import libp2p_fixes
from meshnode.net.announce import jittered
from meshnode.net.errors import NetError
from meshnode.net.events import PeerEvents
from meshnode.net.frames import FrameDecoder, FrameError, encode_frame, sent
from meshnode.net.heartbeat_pace import HeartbeatPace
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.peer_guard import PeerGuard, peer_id_object

log = logging.getLogger("meshnode.net")

PROTOCOL_ID = "/meshnode/heartbeat/2"
MAX_HEARTBEAT_BYTES = 1024  # a heartbeat is ~570 bytes (Ed25519 DID, signature, content DID)
FIRST_FRAME_S = 10.0  # the sender writes its first heartbeat as soon as the stream is open
FRAME_S = 10.0  # a frame, once its first byte came (a heartbeat is one TCP segment)
OPEN_S = 30.0  # identify (5 s at most) and the protocol negotiation
WRITE_S = 10.0  # a write that blocks longer (the peer reads nothing) ends the sender
RETRY_MAX_S = 300.0  # the longest pause before a stream the peer ended is opened again


class HeartbeatStreams:
    """The heartbeat service: a sender per identified connection (``PeerEvents.on_identified``),
    ``serve`` the protocol's handler (registered by ``register``); what it hears goes to
    ``liveness.heard``. ``gating`` opens the streams (``open_stream``)."""

    def __init__(self, key, parts: Libp2pParts, gating, guard: PeerGuard, liveness, events: PeerEvents, metrics,
                 clock: Callable[[], int], *, heartbeat_ms: int, dead_ms: int, limits: Limits = Limits()):
        self.key, self.parts, self.gating, self.guard, self.liveness = key, parts, gating, guard, liveness
        self.metrics, self.clock = metrics, clock
        self.heartbeat_ms, self.dead_ms, self.limits = heartbeat_ms, dead_ms, limits
        self._seq = 0
        self._beating: dict[str, tuple[object, trio.CancelScope]] = {}  # DID -> (connection, its sender's scope)
        self._hearing: dict[str, tuple[object, trio.CancelScope]] = {}  # DID -> (inbound stream, its reader's)
        self.pace = HeartbeatPace(heartbeat_ms // 4)
        events.on_identified(self.start)
        events.on_gone(self._stop)

    def register(self, host) -> None:
        host.set_stream_handler(PROTOCOL_ID, libp2p_fixes.guarded_handler(self.serve, "heartbeat"))

    # --- sending ----------------------------------------------------------------

    def _stop(self, did: str | None) -> None:
        """The peer's last connection closed: its sender ends now, not after its pause (up to 5 min)."""
        beating = self._beating.get(did)
        if beating is not None:
            beating[1].cancel()

    def start(self, did: str, conn, nursery: trio.Nursery) -> None:
        """``conn`` to ``did`` was identified (mesh_gating): heartbeats to it from now on. A sender
        still running for an earlier connection of that peer is stopped."""
        current = self._beating.get(did)
        if current is not None:
            if current[0] is conn:
                return
            current[1].cancel()
        scope = trio.CancelScope()
        self._beating[did] = (conn, scope)
        nursery.start_soon(self._beat_to, did, conn, scope)

    async def _beat_to(self, did: str, conn, scope: trio.CancelScope) -> None:
        """Heartbeats to ``did`` while ``conn`` lasts. A stream the peer reset, or one that could not be
        opened, is tried again after a pause that doubles (one interval, up to RETRY_MAX_S): a peer that
        hears nothing from a live connection would count us dead. A peer without the protocol is not
        asked again on this connection."""
        pause = self.heartbeat_ms / 1000
        try:
            with scope:
                while (conn := self._connection_to(did, conn)) is not None:
                    if await self._beat_on_stream(did, conn) == "unsupported":
                        return
                    if self._connection_to(did, conn) is None:
                        return
                    self.metrics.inc("heartbeat_streams", result="retried")
                    await trio.sleep(jittered(pause))
                    pause = min(2 * pause, RETRY_MAX_S)
        finally:
            if self._beating.get(did, (None, None))[1] is scope:
                del self._beating[did]

    async def _beat_on_stream(self, did: str, conn) -> str:
        """One heartbeat stream to ``did``, written until it or ``conn`` ends: "unsupported" (the peer
        does not speak the protocol), "failed" (not opened in time) or "ended"."""
        try:
            with trio.fail_after(OPEN_S):
                stream = await self.gating.open_stream(did, PROTOCOL_ID)
        except (NetError, trio.TooSlowError) as exc:  # not one of ours (an interop peer), or gone
            unsupported = isinstance(exc, NetError) and exc.code == "unsupported"
            self.metrics.inc("heartbeat_streams", result="unsupported" if unsupported else "failed")
            log.debug("no heartbeat stream to %s: %s", did, getattr(exc, "reason", "timed out"))
            return "unsupported" if unsupported else "failed"
        self.metrics.inc("heartbeat_streams", result="opened")
        interval = self.heartbeat_ms / 1000
        try:
            while self._connection_to(did, conn) is not None:
                with trio.fail_after(WRITE_S):
                    await stream.write(sent(self.metrics, "heartbeat", encode_frame(self._heartbeat_bytes())))
                self.metrics.inc("heartbeats_sent")
                await trio.sleep(jittered(interval))
        except (trio.TooSlowError, Exception) as exc:  # the connection went, or the peer stopped reading
            log.debug("heartbeat stream to %s ended: %s", did, type(exc).__name__)
        finally:
            self.metrics.inc("heartbeat_streams", result="ended")
            await _reset(stream)
        return "ended"

    def _connection_to(self, did: str, conn):
        """``conn`` while it is open, else another open connection to ``did``, else None. With two
        connections (both dialled at once), the sender started for the one identified last; when that
        one closes and the other stays, the peer is still connected and must go on hearing us."""
        if not conn.muxed_conn.is_closed:
            return conn
        if self.parts.host is None:
            return None
        try:
            others = self.parts.host.get_network().get_connections(peer_id_object(did))
        except Exception:  # not a peer id (a test double), or the swarm is gone
            return None
        return next((c for c in others if not c.muxed_conn.is_closed), None)

    def _heartbeat_bytes(self) -> bytes:
        self._seq += 1
        now = self.clock()
        beat = build_container(self.key, "heartbeat", {"seq": self._seq, "status": "ok"},
                               timestamp_ms=now, ttl_ms=now + self.dead_ms)
        return beat.to_bytes()

    # --- hearing ----------------------------------------------------------------

    async def serve(self, stream) -> None:
        """The handler of ``/meshnode/heartbeat/2``: one peer's heartbeats, for as long as it sends them."""
        try:
            did = peer_id_to_did(stream.muxed_conn.peer_id.to_base58())
        except MeshnodeError:  # not an Ed25519 peer: it cannot sign a heartbeat of ours
            self.metrics.inc("heartbeat_streams_in", result="refused")
            await _reset(stream)
            return
        if self.guard.banned(did):
            self.metrics.inc("heartbeat_streams_in", result="refused")
            await _reset(stream)
            return
        previous = self._hearing.get(did)
        with trio.CancelScope() as scope:
            self._hearing[did] = (stream, scope)
            if previous is not None:  # the newer stream wins: see the module's docstring
                previous[1].cancel()
                self.metrics.inc("heartbeat_streams_in", result="replaced")
            else:
                self.metrics.inc("heartbeat_streams_in", result="opened")
            try:
                await self._read_heartbeats_from(did, stream)
            finally:
                if self._hearing.get(did, (None, None))[1] is scope:
                    del self._hearing[did]
                    self.pace.forget(did)
        await _reset(stream)  # ended, refused or replaced: a heartbeat stream is never closed cleanly by us

    async def _read_heartbeats_from(self, did: str, stream) -> None:
        decoder = FrameDecoder(MAX_HEARTBEAT_BYTES)
        deadline = trio.current_time() + FIRST_FRAME_S
        first, started = True, None  # started: when the frame in progress began (None between frames)
        while True:
            with trio.move_on_at(deadline) as waited:
                try:
                    data = await stream.read(MAX_HEARTBEAT_BYTES + 2)
                except Exception:  # reset, or the connection went: the stream is over
                    return
            if waited.cancelled_caught:
                if first and not decoder.pending:
                    self.metrics.inc("heartbeat_streams_in", result="silent")
                else:
                    self.guard.slow_frame(did)
                return
            if not data:  # the peer closed its side
                return
            try:
                frames = decoder.feed(data)
            except FrameError as exc:  # too large for a heartbeat: refused before any decoding
                code = "heartbeat_too_large" if exc.code == "frame_too_large" else exc.code
                self.guard.invalid(did, code, nbytes=len(data))
                return
            for frame in frames:
                if not await self._take_frame(did, frame):
                    return
                first = False
            if first:
                continue  # the first frame's deadline holds
            if not decoder.pending:
                started, deadline = None, math.inf  # between heartbeats: the peer's own interval, unknown here
            elif started is None or frames:  # a new frame began in this chunk: it must end soon
                started = trio.current_time()
                deadline = started + FRAME_S

    async def _take_frame(self, did: str, frame: bytes) -> bool:
        """One frame from ``did``'s stream: taken, ignored (too soon), or invalid (False: reset)."""
        now = self.clock()
        if not self.pace.allow(did, now):
            self.metrics.inc("heartbeats_ignored", reason="too_often")
            return True
        try:
            c = decode_container(frame, now_ms=now, limits=self.limits)
        except ContainerError as exc:
            self.guard.invalid(did, exc.code, nbytes=len(frame))
            return False
        if c.cls != "heartbeat" or c.sender_did != did:
            self.guard.invalid(did, "not_own_heartbeat", nbytes=len(frame))
            return False
        seq = c.payload.get("seq") if isinstance(c.payload, dict) else None
        if type(seq) is not int or seq < 0:
            self.guard.invalid(did, "bad_heartbeat", nbytes=len(frame))
            return False
        await self.liveness.heard(c)
        return True


async def _reset(stream) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(1):
        try:
            await stream.reset()
        except Exception:  # the stream may be gone already
            pass
