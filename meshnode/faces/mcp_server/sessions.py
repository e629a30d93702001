"""``/mcp``'s session manager: the SDK's ``StreamableHTTPSessionManager`` with the admission rule of
``session_policy`` in front of a new session, so abandoned sessions never lock a client out.

The SDK keeps the transport: it ends a session after ``session_idle_timeout`` with no request in flight
(on the event loop's clock) and refuses a new one past ``max_sessions``. It has no hook for which
session may go, so this subclass overrides the two methods where a session is registered and
forgotten (``_admit_session``, called synchronously under the SDK's creation lock, so the choice and
the registration are one step; ``_discard_session``): the pinned SDK version (pyproject) is the one
they are written against, and tests/test_mcp_sessions.py fails if it changes under them. An evicted
session ends as an idle one does (its idle scope is cancelled, the SDK's own clean-up runs); its id
then answers 404 and its client starts a new session, as the MCP spec asks. A refusal is 429 (the
client's limit) or 503 (the node's), with ``Retry-After``.
"""

from __future__ import annotations

import json
import math
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from meshnode.faces.mcp_server.session_policy import RETRY_AFTER_S, Admission, Open, admit

MAX_CLIENT_LABEL = 160  # of the User-Agent kept in a client's key
REFUSALS = {
    "client_cap": (429, "too_many_sessions", "this client ({n}) holds {limit} MCP sessions, each with a request in"
                   " flight; end one (DELETE /mcp) or retry after {retry} s"),
    "full": (503, "sessions_full", "all {limit} MCP sessions of this node have a request in flight;"
             " retry after {retry} s"),
}


@dataclass
class _Request:
    """One HTTP request to ``/mcp``, as the admission rule sees it: who sent it, and why it was refused."""
    client: str
    refused: Admission | None = None


_REQUEST: ContextVar[_Request | None] = ContextVar("meshnode_mcp_request", default=None)


def client_of(scope) -> str:
    """A client's key: its address and its User-Agent (the person's tools share the token and, on
    loopback, the address; a tool that changes its User-Agent is still held by the node's limit)."""
    address = (scope.get("client") or ("unknown", 0))[0]
    agent = next((v for k, v in scope.get("headers", ()) if k == b"user-agent"), b"")
    return f"{address} {agent[:MAX_CLIENT_LABEL].decode('latin-1')}"


class McpSessions(StreamableHTTPSessionManager):
    """The SDK's manager, with at most ``per_client`` sessions per client and the oldest idle session
    ended to make room. ``count(name, **labels)`` counts evictions and refusals (the node's metrics)."""

    def __init__(self, app, *, per_client: int, count: Callable[..., None], **kwargs):
        if kwargs.get("session_idle_timeout") is None or kwargs.get("max_sessions") is None:
            raise ValueError("McpSessions needs session_idle_timeout and max_sessions (its rule measures both)")
        super().__init__(app, **kwargs)
        self.per_client = per_client
        self._count = count
        self._clients: dict[str, str] = {}  # session id -> its client's key

    async def handle_request(self, scope, receive, send) -> None:
        request = _Request(client_of(scope))
        token = _REQUEST.set(request)
        try:
            await super().handle_request(scope, receive, _refusal_shaper(request, send, self))
        finally:
            _REQUEST.reset(token)

    def open_sessions(self) -> list[Open]:
        """The open sessions, oldest first, each with since when it is idle (None: busy)."""
        return [Open(sid, self._clients.get(sid, ""), self._idle_since(t)) for sid, t in self._server_instances.items()]

    def _idle_since(self, transport) -> float | None:
        scope = transport.idle_scope  # None until the session's task started; its deadline is inf while busy
        if scope is None or math.isinf(scope.deadline):
            return None
        return scope.deadline - self.session_idle_timeout

    def _admit_session(self, requestor):
        request = _REQUEST.get() or _Request("")
        decision = admit(self.open_sessions(), request.client, max_total=self.max_sessions,
                         per_client=self.per_client)
        if decision.refused:
            request.refused = decision
            self._count("mcp_sessions_refused", why=decision.why)
            return None
        if decision.evict is not None:
            self._evict(decision.evict)
            self._count("mcp_sessions_evicted", why=decision.why)
        transport = super()._admit_session(requestor)
        if transport is not None:
            self._clients[transport.mcp_session_id] = request.client
        return transport

    def _evict(self, sid: str) -> None:
        """End an idle session now, as its idle timeout would: forgotten at once (its id answers 404), its
        task's idle scope cancelled (the SDK's clean-up then terminates the transport)."""
        transport = self._server_instances.pop(sid)
        self._session_owners.pop(sid, None)
        self._clients.pop(sid, None)
        transport.idle_scope.cancel()

    async def _discard_session(self, session_id, transport) -> None:
        self._clients.pop(session_id, None)
        await super()._discard_session(session_id, transport)


def _refusal_shaper(request: _Request, send, manager: McpSessions):
    """``send`` for one request: the SDK's answer unchanged, except a refused new session, whose 503 becomes
    the refusal of ``REFUSALS`` (status, the node's error shape, ``Retry-After``)."""
    async def shaped(message) -> None:
        if request.refused is None:
            return await send(message)
        status, code, text = REFUSALS[request.refused.why]
        limit = manager.per_client if request.refused.why == "client_cap" else manager.max_sessions
        body = json.dumps({"jsonrpc": "2.0", "id": None,
                           "error": {"code": -32000, "message": f"{code}: " + text.format(
                               n=request.client[:80], limit=limit, retry=RETRY_AFTER_S)}}).encode()
        if message["type"] == "http.response.start":
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body)),
                                    (b"retry-after", b"%d" % RETRY_AFTER_S)]})
        elif message["type"] == "http.response.body":
            await send({"type": "http.response.body", "body": body, "more_body": False})
    return shaped
