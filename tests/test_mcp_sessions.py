"""``/mcp``'s sessions stay open to a new client: the admission rule alone (which session ends, when a
client is refused), then the node's HTTP server in this process (the notebook's app with ``/mcp``,
no node behind it: the tools' control commands are answered here) with the official MCP client: a flood
of abandoned sessions leaves a new client served, a client whose sessions are all busy is refused with
``Retry-After``, and an idle session ends after ``[web] mcp_idle_minutes`` on a clock the test moves."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import httpx
import trio
import trio.testing

from mcpharness import http_session, result
from meshnode.base.config import load_config
from meshnode.base.metrics import Metrics
from meshnode.faces.mcp_server.session_policy import RETRY_AFTER_S, Open, admit
from meshnode.faces.web.address import WebAddress
from meshnode.faces.web.services import Services
from meshnode.node.http import serve_http

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


# the rule

def test_room_is_made_by_ending_the_clients_own_oldest_idle_session():
    sessions = [Open("a1", "A", 5.0), Open("b1", "B", 1.0), Open("a2", "A", 3.0), Open("a3", "A", None)]
    decision = admit(sessions, "A", max_total=10, per_client=3)
    assert (decision.evict, decision.refused, decision.why) == ("a2", False, "client_cap")  # not B's older one
    assert admit(sessions, "B", max_total=10, per_client=3).evict is None  # B is under its limit and the node too


def test_a_full_node_ends_the_oldest_idle_session_of_anyone():
    sessions = [Open("a1", "A", None), Open("b1", "B", 7.0), Open("c1", "C", 2.0), Open("b2", "B", 9.0)]
    decision = admit(sessions, "D", max_total=4, per_client=3)
    assert (decision.evict, decision.refused, decision.why) == ("c1", False, "full")


def test_equally_idle_sessions_go_oldest_first():
    sessions = [Open("first", "A", 1.0), Open("second", "A", 1.0)]
    assert admit(sessions, "A", max_total=9, per_client=2).evict == "first"


def test_only_busy_sessions_refuse_and_say_which_limit():
    busy = [Open("a1", "A", None), Open("b1", "B", None)]
    assert (admit(busy, "A", max_total=9, per_client=1).refused, admit(busy, "A", max_total=9, per_client=1).why) \
        == (True, "client_cap")
    full = admit(busy, "C", max_total=2, per_client=1)
    assert (full.refused, full.evict, full.why) == (True, None, "full")
    assert not admit(busy, "C", max_total=3, per_client=1).refused


# the server

class Control:
    """The node's control commands as the tools reach them: an answer at once, or, while ``hold`` is set,
    a call that waits for it (a request in flight keeps its session busy); each held call is reported on
    ``held``."""

    def __init__(self):
        self.hold: trio.Event | None = None
        self.held_send, self.held = trio.open_memory_channel(100)

    async def handle(self, cmd, args, actor=None):
        if self.hold is not None:
            await self.held_send.send(cmd)
            await self.hold.wait()
        return {"cmd": cmd, "did": "did:key:zFake"}


@contextlib.asynccontextmanager
async def served(tmp_path, **web):
    """The node's HTTP server (node/http.py) on a free loopback port, with ``[web]`` settings ``web``."""
    environ = {"MESHNODE_WEB_LISTEN": "127.0.0.1:0", "MESHNODE_A2A_ENABLED": "false",
               **{f"MESHNODE_WEB_{k.upper()}": str(v) for k, v in web.items()}}
    config = load_config(tmp_path, environ=environ)
    control = Control()
    services = Services(config, None, None, None, Metrics(), control)
    address = WebAddress()
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_http, config, services, address)
        yield SimpleNamespace(url=address.url.rstrip("/"), token=(tmp_path / "web.token").read_text().strip(),
                              metrics=services.metrics, control=control)
        nursery.cancel_scope.cancel()


async def raw(web, body: dict, *, agent: str = "raw", session: str | None = None) -> httpx.Response:
    """One JSON-RPC POST to /mcp, on a connection of its own."""
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {web.token}", "User-Agent": agent,
               **({"mcp-session-id": session} if session else {})}
    async with httpx.AsyncClient(base_url=web.url, timeout=60) as client:
        return await client.post("/mcp", json=body, headers=headers)


async def test_a_flood_of_abandoned_sessions_leaves_a_new_client_served(tmp_path):
    async with served(tmp_path) as web:  # the defaults: 64 sessions, 8 per client
        first: list[str] = []
        async with http_session(web.url, web.token, agent="flood", end=False, session_ids=first) as s:
            await result(s, "status")
        for _ in range(11):  # one client, 12 sessions left open: it holds 8 at most
            async with http_session(web.url, web.token, agent="flood", end=False) as s:
                pass
        assert web.metrics.get("mcp_sessions_evicted", why="client_cap") == 12 - 8
        assert (await raw(web, PING, agent="flood", session=first[0])).status_code == 404  # the oldest went
        for i in range(100):  # 100 clients, one session each, left open: past the node's 64
            async with http_session(web.url, web.token, agent=f"flood-{i}", end=False) as s:
                pass
        assert web.metrics.get("mcp_sessions_evicted", why="full") == 8 + 100 - 64
        async with http_session(web.url, web.token, agent="the person's editor") as s:
            assert (await result(s, "status"))["cmd"] == "status"
        assert web.metrics.get("mcp_sessions_refused", why="full") == 0
        assert web.metrics.get("mcp_sessions_refused", why="client_cap") == 0


async def test_a_client_whose_sessions_are_all_busy_is_refused_with_retry_after(tmp_path):
    async with served(tmp_path, mcp_max_sessions=2, mcp_client_sessions=1) as web:
        web.control.hold = trio.Event()
        async with trio.open_nursery() as nursery:
            async def busy(agent: str):
                async with http_session(web.url, web.token, agent=agent) as s:
                    await result(s, "status")  # in flight until the hold ends

            nursery.start_soon(busy, "editor")
            assert await web.control.held.receive() == "status"
            again = await raw(web, INITIALIZE, agent="editor")
            assert again.status_code == 429 and again.headers["retry-after"] == str(RETRY_AFTER_S)
            assert again.json()["error"]["message"].startswith("too_many_sessions: this client")
            nursery.start_soon(busy, "notebook")
            assert await web.control.held.receive() == "status"
            full = await raw(web, INITIALIZE, agent="a third tool")
            assert full.status_code == 503 and full.headers["retry-after"] == str(RETRY_AFTER_S)
            assert "sessions_full" in full.json()["error"]["message"]
            web.control.hold.set()
        # the busy sessions ended (the client sent DELETE) or are idle now: a new client is served
        assert (await raw(web, INITIALIZE, agent="a third tool")).status_code == 200
        assert web.metrics.get("mcp_sessions_refused", why="client_cap") == 1
        assert web.metrics.get("mcp_sessions_refused", why="full") == 1


async def settled() -> None:
    """Once the server has handled all it was sent (a client gone, a response's last step): time stands
    still on the mock clock, so what it did is what the next jump of the clock sees."""
    await trio.testing.wait_all_tasks_blocked(cushion=0.1)


async def test_an_idle_session_ends_after_the_stated_minutes(tmp_path, mock_clock):
    async with served(tmp_path, mcp_idle_minutes=2) as web:
        ids: list[str] = []
        async with http_session(web.url, web.token, end=False, session_ids=ids) as s:
            await result(s, "status")
        [sid] = ids
        await settled()  # its event stream ended with the client: the session is idle from now
        mock_clock.jump(119)
        assert (await raw(web, PING, session=sid)).status_code == 200  # not yet idle 2 minutes: kept (and used)
        await settled()
        mock_clock.jump(119)
        assert (await raw(web, PING, session=sid)).status_code == 200  # idle again from the ping, not before
        await settled()
        mock_clock.jump(121)
        gone = await raw(web, PING, session=sid)
        assert gone.status_code == 404  # the client starts a new session (MCP spec)
        async with http_session(web.url, web.token) as s:
            assert (await result(s, "status"))["cmd"] == "status"
