"""``/mcp`` set up at its first request: the MCP server SDK (a good part of a node's memory and
start-up) is loaded only in a node whose MCP face a client uses. Until then the route is this
object; then it is ``http.McpHttp``, whose session manager runs in the nursery kept here."""

from __future__ import annotations

import trio

from meshnode.base.lazy import import_in_thread
from meshnode.faces.mcp_server.guard import METHODS, MCP_PATH, refusal


class McpOnDemand:
    """The ``/mcp`` ASGI endpoint; builds and starts ``McpHttp`` once, at the first request."""

    def __init__(self, services):
        self.services = services
        self._http = None
        self._nursery: trio.Nursery | None = None
        self._lock = trio.Lock()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled (with the web server): the nursery the SDK's sessions will live in."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self)
            await trio.sleep_forever()

    async def __call__(self, scope, receive, send) -> None:
        if self._http is None:
            async with self._lock:  # two first requests at once: one builds, the other waits for it
                if self._http is None:
                    await import_in_thread("meshnode.faces.mcp_server.http")  # the SDK: off the event loop
                    from meshnode.faces.mcp_server.http import McpHttp

                    http = McpHttp(self.services)
                    await self._nursery.start(http.run)
                    self._http = http
        await self._http(scope, receive, send)

    def mounts(self) -> list[tuple[str, object, list[str], object]]:
        """(path, ASGI app, methods, the guard's rules for it) for the web's ``build_app``."""
        return [(MCP_PATH, self, METHODS, refusal)]
