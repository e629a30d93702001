"""The node's HTTP server: the web notebook, ``/mcp`` and the A2A routes on one listener.

Three faces side by side is composition, so it is the node's: each face builds its own part and none
imports another. The notebook's app (web.app) serves ``/mcp`` (mcp_server.on_demand) as a mount behind
its guard, with the MCP client's rules (mcp_server.guard) in place of the API's; the A2A face
(a2a.face) sits in front of it, takes its own two paths and asks the notebook's guard only whether a
Host is this node's. Loaded when ``[web] enabled``: Starlette and Hypercorn come with it.
"""

from __future__ import annotations

import trio

from meshnode.base.config.a2a import a2a_settings
from meshnode.faces.mcp_server.on_demand import McpOnDemand
from meshnode.faces.web.address import WebAddress
from meshnode.faces.web.app import build_app, guard_of
from meshnode.faces.web.auth import Auth
from meshnode.faces.web.server import serve_web


async def serve_http(config, services, address: WebAddress, a2a_blocks=None, *,
                     task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Until cancelled; ``task_status.started("host:port")`` once bound (``address`` filled in then).
    ``a2a_blocks``: the node's A2A blocks in memory (records.a2a.blocks.BlockSet), which its actions change."""
    auth = Auth.from_config(config, services.metrics)
    mcp = McpOnDemand(services)  # the MCP SDK loads at the first request to /mcp
    app = build_app(services, auth, mcp.mounts(), address)
    face = None
    if a2a_settings(config.values).enabled:  # a2a-sdk loads at the first A2A request (card or /a2a)
        from meshnode.faces.a2a.face import A2AFace

        face = A2AFace(services, auth, guard_of(app), a2a_blocks)  # the agent's A2A routes in front of the notebook's
    async with trio.open_nursery() as nursery:
        await nursery.start(mcp.run)
        bound = await nursery.start(serve_web, config, services, face.wrap(app) if face is not None else app,
                                    address)
        if face is not None:
            nursery.start_soon(face.run)
        task_status.started(bound)
