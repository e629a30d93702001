"""``/mcp`` on the node's web server: the MCP Streamable HTTP transport (protocols/mcp.md 5).

The SDK's session manager runs as one more task of the web server's nursery (``run``: no second event
loop, its task group is a trio nursery through anyio), and its ASGI handler is a route of the web app
behind the same guard as the API (``guard.py``: Bearer token required). The tools call the node
through ``Services.call``: the same control commands the CLI and the web API use.
"""

from __future__ import annotations

import trio
from mcp.server.transport_security import TransportSecuritySettings

from meshnode.faces.mcp_server.calls import services_call
from meshnode.faces.mcp_server.guard import METHODS, MCP_PATH
from meshnode.faces.mcp_server.server import WRITES, build_server

MAX_SESSIONS = 64  # MCP clients of one person's node; each session holds a little state until idle
SESSION_IDLE_S = 30 * 60.0


class McpHttp:
    """The ``/mcp`` ASGI endpoint and the session manager behind it."""

    def __init__(self, services):
        self.server = build_server(services_call(services, WRITES.__contains__))
        # Host and Origin are the web guard's (protocols/web.md 3.3), checked before a request gets here
        self.server.streamable_http_app(
            streamable_http_path=MCP_PATH, max_request_body_size=int(services.config.values["web"]["max_body_bytes"]),
            session_idle_timeout=SESSION_IDLE_S, max_sessions=MAX_SESSIONS,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.manager = self.server.session_manager

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
