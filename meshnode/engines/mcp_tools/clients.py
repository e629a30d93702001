"""One connection per MCP server, each kept by its own trio task in the node's nursery.

A task connects (``transport``), initializes, lists the tools (schemas and
annotations kept in memory), then re-lists them every ``RELIST_S``. The
session reads the server through a relay that watches the connection: when
it ends (a stdio server's process exited, an HTTP server's connection was
refused or reset) the server is ``unavailable`` at once, its pending calls
end with ``mcp_unavailable`` (``calls``), and its stderr's last line goes to
the status and the log (never the agent's prompt). Reconnecting: after 1 s,
doubling to 5 min while it keeps failing; back to 1 s once a session has
stayed up ``STEADY_S``. Nothing here blocks a tick: the cycle reads the tools
from memory, and a call runs beside the tick past a small budget (``calls``).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import trio
from mcp import types
from mcp.client.session import ClientSession

from meshnode.engines.mcp_tools import transport
from meshnode.base.config.mcp import ServerSettings

log = logging.getLogger("meshnode.engines.mcp_tools")

RELIST_S = 60.0
STEADY_S = 60.0  # a session up this long was not a crash loop: the next reconnect waits the shortest backoff
STDERR_GRACE_S = 1.0  # a closed connection waits this long at most for the rest of the server's stderr
STARTUP_WAIT_S = 5.0  # the node waits this long at most for its servers' first answer, so the first tick sees them
BACKOFF_S = (1.0, 300.0)
MAX_TOOLS = 64  # per server
MAX_SCHEMA = 8192  # characters of one tool's input schema, and of its output schema (as JSON)
MAX_DESCRIPTION = 400


@dataclass(frozen=True)
class ToolInfo:
    name: str
    description: str
    schema: dict
    read_only: bool | None
    destructive: bool | None


@dataclass
class Link:
    settings: ServerSettings
    status: str = "connecting"  # connecting, up, unavailable
    error: str | None = None  # why it is not up (never its stderr: the catalogue shows this to the agent)
    tools: dict[str, ToolInfo] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # tools not offered, with the reason
    session: ClientSession | None = None
    broken: trio.Event = field(default_factory=trio.Event)
    settled: trio.Event = field(default_factory=trio.Event)  # its first attempt ended (up, or failed)
    tail: transport.Tail = field(default_factory=transport.Tail)  # its process's stderr, exit code
    last_words: str | None = None  # its stderr's last line when it failed: never in the agent's prompt
    up_since: float | None = None  # trio time its session came up (None: not up in this attempt)

    def gone(self, broken: trio.Event, reason: str) -> None:
        """The session of ``broken`` lost its server: at once unavailable (while it is still the current
        session), its calls ended (``calls`` watches ``broken``)."""
        if broken.is_set():
            return
        if broken is self.broken:
            self.error, self.last_words = reason, _tail(self.tail.text) or self.last_words
            self.status, self.session, self.tools = "unavailable", None, {}
        broken.set()


class Session(ClientSession):
    """The SDK's session without its check of a result's structured content against the tool's
    output schema: it runs the server's regexes on the trio thread (a catastrophic ``pattern``
    freezes the node), and the node shows results as text only (``calls.shown``)."""

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        return None


class Clients:
    def __init__(self, servers: list[ServerSettings], home: Path):
        self.links = {s.name: Link(s) for s in servers}
        self.home = home

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for link in self.links.values():
                nursery.start_soon(self._keep, link)
            with trio.move_on_after(STARTUP_WAIT_S):
                for link in self.links.values():
                    await link.settled.wait()
            task_status.started()

    def status(self) -> list[dict]:
        return [{"server": name, "status": link.status, "error": link.error, "stderr": link.last_words,
                 "tools": sorted(link.tools),
                 "sandboxed": link.settings.sandboxed, "skipped": link.skipped} for name, link in self.links.items()]

    async def _keep(self, link: Link) -> None:
        delay = BACKOFF_S[0]
        while True:
            link.up_since = None
            try:
                await self._session(link)
                delay = BACKOFF_S[0]  # it ran and ended cleanly: try again soon
            except Exception as exc:  # any failure of one server: logged, retried; the node goes on
                if not (link.broken.is_set() and link.error):  # else the reason said when it broke
                    link.error = _reason(exc)
                link.last_words = _tail(link.tail.text) or link.last_words  # its stderr: status and log only
                if link.up_since is not None and trio.current_time() - link.up_since >= STEADY_S:
                    delay = BACKOFF_S[0]  # it served a while: a crash now and then is retried soon
                log.warning("MCP server %s: %s%s (again in %.0f s)", link.settings.name, link.error,
                            f" (its stderr: {link.last_words})" if link.last_words else "", delay)
            link.status, link.session, link.tools = "unavailable", None, {}
            link.settled.set()
            await trio.sleep(delay)
            delay = min(delay * 2, BACKOFF_S[1])
            link.status = "connecting"

    async def _session(self, link: Link) -> None:
        s = link.settings
        link.broken, link.tail = trio.Event(), transport.Tail()
        broken, tail = link.broken, link.tail
        async with transport.connect(s, self.home, tail) as (read, write), trio.open_nursery() as watch:
            relayed, to_session = anyio.create_memory_object_stream(0)
            watch.start_soon(_relay, read, relayed, tail, lambda why: link.gone(broken, why))
            try:
                await self._serve(link, Session(to_session, write))
            finally:
                watch.cancel_scope.cancel()

    async def _serve(self, link: Link, session: Session) -> None:
        """Initialize, list the tools, then list them again every RELIST_S until the session breaks."""
        s = link.settings
        async with session:
            with trio.fail_after(s.timeout_s):
                await session.initialize()
            while True:
                with trio.fail_after(s.timeout_s):
                    listed = await _list(session)
                if link.broken.is_set():  # it went away while listing
                    raise ConnectionError(link.error or "the connection broke")
                link.tools, link.skipped = _tools(listed)
                if link.status != "up":
                    log.info("MCP server %s: %d tools (%s)", s.name, len(link.tools),
                             "sandboxed" if s.sandboxed else "trusted" if s.url is None else plain_url(s.url))
                link.status, link.session, link.error = "up", session, None
                link.up_since = link.up_since or trio.current_time()
                link.settled.set()
                with trio.move_on_after(RELIST_S):
                    await link.broken.wait()
                if link.broken.is_set():
                    raise ConnectionError(link.error or "the connection broke during a call")


async def _relay(read, into, tail: transport.Tail, gone) -> None:
    """Pass the transport's messages on to the session; when the transport ends (a stdio server's
    process exited, an HTTP server refused or reset the connection), call ``gone`` with why, once
    its stderr had a moment to say why too, then end the session's stream (its waiters get
    CONNECTION_CLOSED, read as ``mcp_unavailable``)."""
    failure = None
    async with into:
        try:
            async for item in read:
                if isinstance(item, Exception):
                    failure = item  # kept for the reason: the SDK goes on (a parse error), or the stream ends
                await into.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            pass
        with trio.move_on_after(STDERR_GRACE_S):
            await tail.closed.wait()
        why = "the server closed the connection"
        if tail.exit_code is not None:
            why = f"the server's process exited (code {tail.exit_code})"
        elif failure is not None:
            why += f" ({_reason(failure)})"
        gone(why)


async def _list(session: ClientSession) -> list:
    """Every page of tools/list, up to a few more than MAX_TOOLS (the rest are not offered anyway)."""
    tools, cursor = [], None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor or len(tools) > MAX_TOOLS:
            return tools


def _tools(listed) -> tuple[dict[str, ToolInfo], list[str]]:
    tools, skipped = {}, []
    for t in listed:
        schema = t.input_schema if isinstance(t.input_schema, dict) else {}
        if len(tools) >= MAX_TOOLS:
            skipped.append(f"{t.name[:64]}: more than {MAX_TOOLS} tools")
        elif not transport_name_ok(t.name):
            skipped.append(f"{t.name[:64]!r}: a tool name is 1 to 64 letters, digits or _-.")
        elif len(json.dumps(schema)) > MAX_SCHEMA:
            skipped.append(f"{t.name}: its input schema is longer than {MAX_SCHEMA} characters")
        elif len(json.dumps(t.output_schema or {})) > MAX_SCHEMA:  # the SDK keeps it (not checked: Session)
            skipped.append(f"{t.name}: its output schema is longer than {MAX_SCHEMA} characters")
        else:
            a = t.annotations
            tools[t.name] = ToolInfo(t.name, " ".join((t.description or t.title or "").split())[:MAX_DESCRIPTION],
                                     schema, a.read_only_hint if a else None, a.destructive_hint if a else None)
    return tools, skipped


def transport_name_ok(name: str) -> bool:
    return 0 < len(name) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-.") for c in name)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    return _URL.sub(lambda m: plain_url(m.group(0)), f"{type(exc).__name__}: {exc}")[:300]


def _tail(stderr: str) -> str | None:
    """The last line the server wrote to stderr (a traceback's is its error), without URL secrets."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return _URL.sub(lambda m: plain_url(m.group(0)), lines[-1])[:300] if lines else None


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def plain_url(url: str) -> str:
    """``url`` without its userinfo, query and fragment (where tokens hide), for logs and status."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
