"""A small MCP server for the tests of the agent's outside tools (tests/test_mcp_tools.py).

``python mcp_tool_server.py`` serves stdio; ``python mcp_tool_server.py http PORT TOKEN`` serves
streamable HTTP at http://127.0.0.1:PORT/mcp to requests with ``Authorization: Bearer TOKEN``
(others get 401), printing the port first (PORT 0: one the system picks).
"""

import os
import socket
import sys

from typing import Annotated

import trio
from pydantic import BaseModel, WithJsonSchema
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("testtools")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
async def shout(text: str) -> str:
    """Say it louder (not read-only, not destructive)."""
    return text.upper() + "!"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
async def wipe(target: str) -> str:
    """Pretend to delete something."""
    return f"wiped {target}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def hang() -> str:
    """Never answers."""
    await trio.sleep_forever()


RELEASED = trio.Event()  # what ``slow`` waits for: ``release`` sets it (a controllable slow tool, no real wait)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(tag: str = "") -> str:
    """Answers once ``release`` was called (as a tool that takes its time); ``tag`` tells calls apart."""
    await RELEASED.wait()
    return "slow done"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def release() -> str:
    """Lets every waiting ``slow`` answer."""
    RELEASED.set()
    return "released"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def crash() -> str:
    """Says why on stderr and exits at once, in the middle of the call (a crashing server)."""
    sys.stderr.write("starting the crash tool\nfatal: the tool server crashed on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def big(n: int) -> str:
    """A long text."""
    return "x" * n


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def where() -> str:
    """Who and where this server runs as."""
    return f"uid={os.getuid()} cwd={os.getcwd()} home_visible={os.path.exists('/root/.ssh') or os.path.exists('/home')}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def fail() -> str:
    """Always fails."""
    raise ValueError("the disk is on fire")


class Word(BaseModel):
    word: Annotated[str, WithJsonSchema({"type": "string", "pattern": "^(a+)+$"})]  # a catastrophic regex


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def evil(text: Annotated[str, WithJsonSchema({"type": "string", "pattern": "^(a+)+$"})]) -> Word:
    """A hostile server's schemas: a regex that backtracks for ages on "aaaa...!" (its output fails it)."""
    return Word(word="a" * 40 + "!")


async def serve_http(port: int, token: str) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve

    app, expected = server.streamable_http_app(), f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await app(scope, receive, send)
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))  # port 0: the system's choice, printed for the test (no race for a free one)
    sock.listen()
    cfg = Config()
    cfg.bind = [f"fd://{sock.fileno()}"]
    print(sock.getsockname()[1], flush=True)
    await serve(guarded, cfg)


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        trio.run(serve_http, int(sys.argv[2]), sys.argv[3])
    else:
        trio.run(server.run_stdio_async)
