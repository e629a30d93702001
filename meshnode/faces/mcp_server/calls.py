"""The one function every tool calls: ``call(cmd, **args)``, a control command of the node
(protocols/mcp.md 2). Two backends: the control socket (``meshnode mcp``) and the web server's
Services (``/mcp``); both give a MeshnodeError for every expected failure, which ``run`` turns
into the tool's error text ``<code>: <reason>``. Either way the node runs it for the person
through mcp (the socket's client says so; ``/mcp`` passes ``MCP_PERSON``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from meshnode.net import control
from meshnode.app.actor import person
from meshnode.base.errors import MeshnodeError

Call = Callable[..., Awaitable[Any]]
MCP_PERSON = person("mcp")  # who asks through /mcp (``meshnode mcp`` says so on the control socket)
SOCKET_TIMEOUT = 100.0  # above control.HANDLER_TIMEOUT: the node answers first, with its own timeout error


def message(exc: MeshnodeError) -> str:
    return f"{exc.code}: {exc.reason}"


async def run(call: Call, cmd: str, **args) -> str:
    """``call(cmd, **args)`` for a tool, its result as one JSON text: arguments left as None are not
    sent (the command's defaults apply), a MeshnodeError becomes the tool's error result."""
    return as_text(await answer(call, cmd, **args))


async def answer(call: Call, cmd: str, **args) -> Any:
    """``run``'s result before it becomes text (for a tool that shapes it)."""
    try:
        return await call(cmd, **{k: v for k, v in args.items() if v is not None})
    except MeshnodeError as exc:
        raise ToolError(message(exc)) from None


def as_text(value: Any) -> str:
    """One JSON text (a list would otherwise become one content block per row)."""
    return json.dumps(value, ensure_ascii=False, default=str)


async def read(call: Call, cmd: str, **args) -> Any:
    """``run`` for a resource (its error is a ResourceError, with the same text)."""
    try:
        return await call(cmd, **{k: v for k, v in args.items() if v is not None})
    except MeshnodeError as exc:
        raise ResourceError(message(exc)) from None


def socket_call(data_dir: Path) -> Call:
    """The backend of ``meshnode mcp``: the running node's control socket, in a worker thread
    (``control.call`` blocks); ``node_not_running`` when no node answers."""
    path = control.socket_path(data_dir)

    async def call(cmd: str, **args) -> Any:
        return await trio.to_thread.run_sync(ask, cmd, args, abandon_on_cancel=True)

    def ask(cmd: str, args: dict) -> Any:
        try:
            return control.call(path, cmd, args, timeout=SOCKET_TIMEOUT, face="mcp")
        except OSError as exc:  # the node went away mid-request (a reset, a broken pipe)
            raise MeshnodeError("control_unreachable", f"lost the node at {path}: {exc.strerror or exc}") from None
    return call


def services_call(services, changes: Callable[[str], bool]) -> Call:
    """The backend of ``/mcp``: the web server's Services (the same control commands, in the node);
    after a command that ``changes`` something, the notebook's feed looks now (as after a POST).
    Each call is counted in ``mcp_calls{cmd, outcome}`` (``ok`` or the error's code)."""
    async def call(cmd: str, **args) -> Any:
        try:
            result = await services.call(cmd, actor=MCP_PERSON, **args)
        except MeshnodeError as exc:
            services.metrics.inc("mcp_calls", cmd=cmd, outcome=exc.code[:64])
            raise
        services.metrics.inc("mcp_calls", cmd=cmd, outcome="ok")
        if changes(cmd):
            services.feed.nudge()
        return result
    return call
