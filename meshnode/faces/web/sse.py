"""The event feed and ``GET /api/events`` (server-sent events; protocols/web.md 5).

One reader for every open stream: ``Feed.run`` polls the database every ``[web] feed_ms``, or at
once when nudged (a web write, a stored container, the end of a tick), with one
``store.read(feed_sources.poll, marks)``; it does nothing while no stream is open. Each stream
gets the events of the types it asked for through a bounded buffer: a client too slow to drain it
is closed with a final ``resync`` rather than holding up the feed. The cycle's mode and the
connected peers are diffed at each poll. What is read and the cursor format are in
``feed_sources``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field

import trio
from starlette.responses import JSONResponse, StreamingResponse

from meshnode.base.errors import MeshnodeError
from meshnode.faces.web import feed_sources as fs
from meshnode.faces.web.auth import COOKIE
from meshnode.faces.web.endpoint import Arg, Endpoint
from meshnode.faces.web.errors import error_body, status_for
from meshnode.faces.web.live_feed import LiveTokens

log = logging.getLogger("meshnode.faces.web")

BUFFER = 256       # events waiting for one slow client before its stream is closed
PING_S = 15.0      # an SSE comment this often keeps proxies from closing an idle stream
RETRY_MS = 2000    # the browser's reconnection delay
SHARED_VIA = ("shared", "leader")  # streams one per browser session


def frame(kind: str, data: dict, cursor: str | None = None) -> bytes:
    """One SSE event; ``cursor`` as its ``id:`` (the browser sends it back as Last-Event-ID)."""
    head = f"event: {kind}\n" + (f"id: {cursor}\n" if cursor is not None else "")
    return (head + "data: " + json.dumps(data, ensure_ascii=False, default=str) + "\n\n").encode("utf-8")


@dataclass(eq=False)
class Stream:
    types: frozenset[str]
    send: trio.MemorySendChannel
    receive: trio.MemoryReceiveChannel
    backlog: list[bytes] = field(default_factory=list)  # the catch-up of a resumed stream, sent first
    lagged: bool = False
    holder: str | None = None  # the browser session whose one shared stream this is (None: any number)
    seq: int = 0  # when its browser asked for it (newer wins, whatever the order requests arrive in)
    replaced: bool = False

    def wants(self, kind: str) -> bool:
        return kind == "resync" or kind in self.types


class Feed:
    """Tails the database for new events; ``nudge`` asks for a poll soon."""

    def __init__(self, services):
        self.services = services
        web = services.config.values.get("web", {}) if services.config is not None else {}
        self.feed_s = float(web.get("feed_ms", 500)) / 1000
        self.max_streams = int(web.get("max_streams", 16))
        # the Retry-After of a stream refused at max_streams: a tab closes, a slot frees
        self.refused_retry_s = int(web.get("refused_retry_seconds", 10))
        self.streams = 0                   # open (or opening) streams: the gauge meshnode_web_sse_streams
        self.marks: fs.Marks | None = None  # None: nobody watches, the marks are stale
        self.polls = 0
        self._subs: set[Stream] = set()
        self._lock = trio.Lock()           # a poll and a stream's start never interleave
        self._nudged = trio.Event()
        self._wanted = trio.Event()
        self._mode: dict | None = None
        self._peers: set[str] | None = None
        self.live = LiveTokens(self.send_live, self.nudge)  # the LLM's answer as it is written (live_feed)

    def nudge(self) -> None:
        self._nudged.set()

    def _count(self, name: str, n: int = 1, **labels: str) -> None:
        if self.services.metrics is not None:
            self.services.metrics.inc(name, n, **labels)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.live.run)
            await self._poll_loop(task_status)

    async def _poll_loop(self, task_status) -> None:
        task_status.started()
        while True:
            if not self._subs:
                self._wanted = trio.Event()
                await self._wanted.wait()
            with trio.move_on_after(self.feed_s):
                await self._nudged.wait()
            self._nudged = trio.Event()
            try:
                if await self.poll_once():
                    self._nudged.set()  # rows left past the limit: go on at once
            except MeshnodeError as exc:  # a busy database: the next poll tries again
                log.warning("event feed: %s", exc.reason)
                self._count("web_feed_errors", reason=exc.code)
                await trio.sleep(self.feed_s)

    # --- polling ----------------------------------------------------------------------------------

    async def _refresh(self) -> None:
        """Start watching from now: the newest rows, the cycle's mode and peers as they are."""
        self.marks = await self.services.read(fs.heads)
        _, self._mode = fs.mode_event(self._status(), None)
        self._peers = self._connected()

    async def poll_once(self) -> bool:
        """One read of every source, sent to every stream; True when rows were left for later."""
        async with self._lock:
            if not self._subs:
                self.marks = None
                return False
            if self.marks is None:
                await self._refresh()
            result = await self.services.read(fs.poll, self.marks)
            self.marks = result["marks"]
            self.polls += 1
            events = [(kind, data) for _, kind, data in result["events"]]
            mode, self._mode = fs.mode_event(self._status(), self._mode)
            if mode is not None:
                events.append(("mode", mode))
            connected = self._connected()
            events += [("peer", p) for p in fs.peer_events(connected, self._peers)]
            self._peers = connected
            if events:
                self._broadcast(events, fs.encode(self.marks))
            return bool(result["more"])

    def _status(self) -> dict | None:
        cycle = self.services.cycle
        return cycle.status() if cycle is not None else None

    def _connected(self) -> set[str]:
        mesh = self.services.mesh
        if mesh is None:
            return set()
        from meshnode.base.identity.did import peer_id_to_did

        out = set()
        for peer_id in mesh.peers_snapshot().get("connected", []):
            try:
                out.add(peer_id_to_did(peer_id))
            except MeshnodeError:
                out.add(peer_id)
        return out

    def _broadcast(self, events: list[tuple[str, dict]], cursor: str) -> None:
        """Each stream gets its types; the last event it gets carries the cursor (an event without
        ``id:`` keeps the browser's last one, so a cut mid-batch resends the batch: nothing lost)."""
        for stream in list(self._subs):
            mine = [(k, d) for k, d in events if stream.wants(k)]
            for n, (kind, data) in enumerate(mine):
                try:
                    stream.send.send_nowait(frame(kind, data, cursor if n == len(mine) - 1 else None))
                except (trio.WouldBlock, trio.ClosedResourceError):
                    self._drop(stream, lagged=True)
                    break
            self._count("web_sse_events", len(mine))

    def send_live(self, kind: str, data: dict) -> None:
        """An event that is no row of the database (the LLM's answer as it is written): to every stream
        that wants it now, without a cursor (a resumed stream does not get it again)."""
        for stream in list(self._subs):
            if kind in stream.types:
                try:
                    stream.send.send_nowait(frame(kind, data))
                except (trio.WouldBlock, trio.ClosedResourceError):
                    self._drop(stream, lagged=True)
                else:
                    self._count("web_sse_events")

    def _drop(self, stream: Stream, *, lagged: bool) -> None:
        if stream in self._subs:
            self._subs.discard(stream)
            if lagged:
                stream.lagged = True
                self._count("web_sse_dropped", reason="slow_client")
            stream.send.close()

    # --- streams ----------------------------------------------------------------------------------

    async def open(self, types: frozenset[str], last_event_id: str | None, holder: str | None = None,
                   seq: int = 0) -> Stream:
        """A new stream at the current marks, or resumed at ``last_event_id`` (its missed rows first;
        more than RESUME_LIMIT of one source, or a cursor this database cannot follow: ``resync``).

        ``holder``: the browser session of a stream all its tabs share (a SharedWorker's or a leader
        tab's), asked for at ``seq`` by the browser's clock. A browser has one such stream: a newer
        one (a higher ``seq``) ends the older with ``replaced``, however they arrive. The
        older is a worker that went away with its page, whose request Chromium may leave open for
        a while; left open, a few of them fill the browser's six connections to this host and
        every navigation waits for one."""
        if self.streams >= self.max_streams:
            self._count("web_sse_refused", reason="max_streams")
            raise MeshnodeError("too_many_streams", f"{self.streams} event streams are open, the most"
                                f" [web] max_streams allows (one per browser); retry in {self.refused_retry_s} s")
        self.streams += 1
        try:
            send, receive = trio.open_memory_channel(BUFFER)
            stream = Stream(types, send, receive, holder=holder, seq=seq)
            async with self._lock:
                if self.marks is None or not self._subs:
                    await self._refresh()
                if last_event_id:
                    stream.backlog = await self._catch_up(stream, last_event_id)
                self._subs.add(stream)
                if holder is not None:
                    for other in [s for s in self._subs if s is not stream and s.holder == holder]:
                        older = other if other.seq <= seq else stream  # a reopen may overtake its predecessor
                        older.replaced = True
                        self._count("web_sse_replaced")
                        self._drop(older, lagged=False)
        except BaseException:
            self.streams -= 1
            raise
        self._wanted.set()
        return stream

    async def _catch_up(self, stream: Stream, last_event_id: str) -> list[bytes]:
        cursor = fs.decode(last_event_id)
        now = fs.encode(self.marks)
        if cursor is None or fs.ahead(cursor, self.marks):
            self._count("web_sse_resync", reason="cursor")
            return [frame("resync", {"reason": "unknown cursor"}, now)]
        missed = await self.services.read(fs.poll, cursor, self.marks, fs.RESUME_LIMIT + 1)
        if missed["more"]:
            self._count("web_sse_resync", reason="too_many_missed")
            return [frame("resync", {"reason": f"more than {fs.RESUME_LIMIT} missed rows of {missed['more'][0]}"},
                          now)]
        mine = [(k, d) for _, k, d in missed["events"] if stream.wants(k)]
        return [frame(k, d, now if n == len(mine) - 1 else None) for n, (k, d) in enumerate(mine)]

    def close(self, stream: Stream) -> None:
        self._drop(stream, lagged=False)
        self.streams -= 1

    async def frames(self, stream: Stream):
        """The bytes of one stream: the retry delay, its backlog, then live events and pings."""
        yield f"retry: {RETRY_MS}\n\n".encode()
        for chunk in stream.backlog:
            yield chunk
        stream.backlog = []
        while True:
            chunk, ended = None, False
            with trio.move_on_after(PING_S):
                try:
                    chunk = await stream.receive.receive()
                except trio.EndOfChannel:
                    ended = True
            if ended:
                break
            yield chunk if chunk is not None else b": ping\n\n"
        if stream.lagged:  # the buffer filled: the page reloads its lists and reconnects
            yield frame("resync", {"reason": "the client read too slowly"})
        elif stream.replaced:  # this browser opened a newer shared stream: this one does not come back
            yield frame("replaced", {"reason": "a newer stream of this browser took over"})


class EventStreamResponse(StreamingResponse):
    """The stream's response; its slot is given back however the connection ends."""

    def __init__(self, feed: Feed, stream: Stream):
        super().__init__(feed.frames(stream), media_type="text/event-stream",
                         headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self.feed, self.stream = feed, stream

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.feed.close(self.stream)


async def events(services, args: dict, request) -> StreamingResponse:
    types = args["types"] or list(fs.EVENT_TYPES)
    unknown = sorted(set(types) - set(fs.EVENT_TYPES))
    if unknown:
        raise MeshnodeError("bad_arguments", f"unknown event type {unknown[0][:40]!r};"
                            f" the types are {', '.join(fs.EVENT_TYPES)}")
    try:
        stream = await services.feed.open(frozenset(types), request.headers.get("last-event-id"),
                                          _holder(args["via"], request), args["seq"] or 0)
    except MeshnodeError as exc:
        if exc.code != "too_many_streams":
            raise
        # 503 with Retry-After: the page says its live updates were refused and tries again then
        return JSONResponse(error_body(exc.code, exc.reason), status_code=status_for(exc.code),
                            headers={"retry-after": str(services.feed.refused_retry_s)})
    return EventStreamResponse(services.feed, stream)


def _holder(via: str | None, request) -> str | None:
    """The session a browser's one shared stream belongs to: its session cookie, for a stream its
    SharedWorker or leader tab opened (``via``); None for a tab's own stream and for a token."""
    cookie = request.cookies.get(COOKIE)
    if via in SHARED_VIA and cookie and not request.headers.get("authorization"):
        return hashlib.sha256(cookie.encode()).hexdigest()[:32]
    return None


ROUTES = [Endpoint("GET", "/api/events", events, raw=True,
                   args={"types": Arg(list, max=len(fs.EVENT_TYPES), doc="event types (default all)"),
                         "via": Arg(str, choices=("shared", "leader", "local"),
                                    doc="who holds the stream: a SharedWorker or a leader tab for all the"
                                        " browser's tabs (a newer one of the same session replaces it), or"
                                        " one tab (local)"),
                         "seq": Arg(int, min=0, max=2**53, doc="when the browser asked for this stream (its"
                                    " clock, increasing): of a session's shared streams the latest stays")},
                   doc="server-sent events: tick, command, gate, held, note, chat, goal, task, draft, confirm,"
                       " snapshot, reactor, mode, peer, llm_token (the answer as the LLM writes it), resync;"
                       " Last-Event-ID resumes")]
