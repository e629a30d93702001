"""MCP clients of a real node, for tests: the official SDK's ``ClientSession`` over stdio (``meshnode mcp``
as a child process) or over Streamable HTTP (``/mcp`` with the web token); ``result`` and ``refusal``
read a tool call's answer."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


@contextlib.asynccontextmanager
async def stdio_session(node, errlog: Path):
    """A session with ``meshnode --home <node's home> mcp``; its stderr goes to ``errlog``."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "meshnode", "--home", str(node.home), "mcp"],
                                   env=node.env)
    with open(errlog, "w") as err:
        async with stdio_client(params, errlog=err) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def http_session(url: str, token: str, *, agent: str | None = None, end: bool = True,
                       session_ids: list | None = None):
    """A session with ``url``/mcp, sending ``Authorization: Bearer <token>`` (and ``User-Agent: agent``:
    the node tells clients apart by address and User-Agent). ``end=False`` leaves the session open when
    the client goes (no DELETE: abandoned); ``session_ids`` gets the session's id."""
    headers = {"Authorization": f"Bearer {token}", **({"User-Agent": agent} if agent else {})}
    async with create_mcp_http_client(headers=headers) as client:
        if session_ids is not None:
            async def keep_id(response):
                sid = response.headers.get("mcp-session-id")
                if sid and sid not in session_ids:
                    session_ids.append(sid)
            client.event_hooks["response"].append(keep_id)
        async with streamable_http_client(f"{url}/mcp", http_client=client, terminate_on_close=end) as (r, w, *_):
            async with ClientSession(r, w) as session:
                await session.initialize()
                yield session


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def result(session, tool: str, **args):
    """The tool's answer, parsed (it must not be an error)."""
    out = await session.call_tool(tool, args)
    assert not out.is_error, f"{tool}: {text_of(out)}"
    return json.loads(text_of(out))


async def refusal(session, tool: str, **args) -> str:
    """The text of the tool's error result (it must be one)."""
    out = await session.call_tool(tool, args)
    assert out.is_error, f"{tool} {args} was not refused: {text_of(out)[:300]}"
    text = text_of(out)
    assert "Traceback" not in text and 'File "' not in text, text
    return text
