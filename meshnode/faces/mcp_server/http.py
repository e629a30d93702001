"""``/mcp`` on the node's web server: the MCP Streamable HTTP transport (protocols/mcp.md 5).

The SDK's session manager runs as one more task of the web server's nursery (``run``: no second event
loop, its task group is a trio nursery through anyio), and its ASGI handler is a route of the web app
behind the same guard as the API (``guard.py``: Bearer token required). The tools call the node
through ``Services.call``: the same control commands the CLI and the web API use. The session manager
is ``sessions.McpSessions``: the SDK's, with ``[web] mcp_idle_minutes``, ``mcp_max_sessions`` and
``mcp_client_sessions`` (the oldest idle session ends to make room for a new one).
"""

from __future__ import annotations

import trio
from mcp.server.transport_security import TransportSecuritySettings

from meshnode.faces.mcp_server.calls import services_call
from meshnode.faces.mcp_server.guard import METHODS, MCP_PATH
from meshnode.faces.mcp_server.server import WRITES, build_server
from meshnode.faces.mcp_server.sessions import McpSessions


class McpHttp:
    """The ``/mcp`` ASGI endpoint and the session manager behind it."""

    def __init__(self, services):
        web = services.config.values["web"]
        self.server = build_server(services_call(services, WRITES.__contains__),
                                   refused=lambda tool, why: services.metrics.inc("mcp_refused", tool=tool, why=why))
        # the SDK's Starlette app and its manager are not used: building them gives the low-level server
        # (the manager's ``app``) that ours serves
        self.server.streamable_http_app(streamable_http_path=MCP_PATH)
        # Host and Origin are the web guard's (protocols/web.md 3.3), checked before a request gets here
        self.manager = McpSessions(
            self.server.session_manager.app, per_client=int(web["mcp_client_sessions"]),
            count=services.metrics.inc, max_request_body_size=int(web["max_body_bytes"]),
            session_idle_timeout=float(web["mcp_idle_minutes"]) * 60, max_sessions=int(web["mcp_max_sessions"]),
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled (with the web server): the sessions' tasks live here."""
        async with self.manager.run():
            task_status.started(self)
            await trio.sleep_forever()

    async def __call__(self, scope, receive, send) -> None:
        await self.manager.handle_request(scope, receive, send)

    def mounts(self) -> list[tuple[str, object, list[str]]]:
        """(path, ASGI app, methods) for ``build_app``."""
        return [(MCP_PATH, self, METHODS)]
