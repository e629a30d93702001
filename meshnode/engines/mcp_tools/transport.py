"""The streams a ``ClientSession`` talks over, for each kind of server.

A sandboxed stdio server runs through ``gate.sandbox.spawn`` itself, the way
the gate runs every agent command (new namespaces, its own root, rlimits,
uid 65534, killed with the node), but kept open: its stdin stays a pipe, its
time limit is the node's lifetime, and the host folders its program needs
(``read_only``) are bound read-only. Its folder ``<home>/mcp/NAME`` is its
/workspace. The SDK's own ``stdio_client`` cannot be used there (it starts
the process itself), so this module frames JSON-RPC lines the same way:
one message per line, stderr kept to a bounded tail for the error message.
A trusted stdio server uses the SDK's ``stdio_client`` (its stderr read
through a pipe into the same tail); an HTTP one its
``streamable_http_client`` with our headers. ``Tail`` is what a server
leaves for the person when it fails: its stderr's last words and, for a
sandboxed one, its exit code (status and log only, never the agent's prompt).
"""

from __future__ import annotations

import os
import shutil
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import trio
from mcp import types
from mcp.shared.message import SessionMessage

from meshnode.engines.gate import runner, sandbox
from meshnode.base.config.mcp import ServerSettings

MAX_LINE = 4 << 20  # one JSON-RPC message from a server (a tool's result is cut far below this anyway)
STDERR_TAIL = 2000
FOREVER_S = 2**31 - 100  # the sandbox's backstop: a long-lived server lives as long as the node


class Tail:
    """A server process's stderr, its last ``STDERR_TAIL`` characters, and its exit code when it is
    watched (a sandboxed server); ``closed`` once both are known (at once for an HTTP server)."""

    def __init__(self):
        self.text, self.exit_code, self.closed = "", None, trio.Event()
        self._waiting = {"stderr"}

    def add(self, chunk: bytes) -> None:
        self.text = (self.text + chunk.decode("utf-8", "replace"))[-STDERR_TAIL:]

    def watch_exit(self) -> None:
        self._waiting.add("exit")

    def ended(self, what: str) -> None:
        self._waiting.discard(what)
        if not self._waiting:
            self.closed.set()

    def exited(self, code: int) -> None:
        self.exit_code = code
        self.ended("exit")

    async def read(self, stream) -> None:
        """Collect ``stream`` until it ends."""
        try:
            while chunk := await stream.receive_some(4096):
                self.add(chunk)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass
        finally:
            self.ended("stderr")


@asynccontextmanager
async def connect(server: ServerSettings, home: Path, tail: Tail):
    """(read stream, write stream) for a ClientSession; ``tail`` collects the server's last words."""
    if server.url is not None:
        tail.ended("stderr")
        from mcp.client.streamable_http import streamable_http_client

        from meshnode.engines.mcp_tools import capped_http

        # the SDK's timeouts (a response stream may stay open for minutes); each call has the server's own
        async with capped_http.client(dict(server.headers)) as client:
            async with streamable_http_client(server.url, http_client=client) as (read, write, *_):
                yield read, write
    elif server.trusted:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=server.command[0], args=list(server.command[1:]),
                                       env=dict(server.env) or None)
        out, into = os.pipe()  # its stderr: a pipe read here (the SDK wants a file to hand the process)
        try:
            errlog = os.fdopen(into, "w")
        except BaseException:
            os.close(into)
            os.close(out)
            raise
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tail.read, trio.lowlevel.FdStream(out))
            try:
                with errlog:
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        errlog.close()  # the process holds its copy: the pipe ends when it does
                        yield read, write
            finally:
                nursery.cancel_scope.cancel()
    else:
        async with sandboxed(server, home, tail) as streams:
            yield streams


def policy(server: ServerSettings) -> runner.CommandPolicy:
    return runner.CommandPolicy(programs={}, timeout_s=float(FOREVER_S), cpu_seconds=FOREVER_S,
                                memory_bytes=server.memory_bytes, network=server.network)


def program(name: str) -> str:
    """The executable a sandboxed server's ``command`` names: a path, or a name in the gate's PATH."""
    found = name if os.path.isabs(name) else shutil.which(name, path=runner.SEARCH_PATH)
    if found is None or not os.access(found, os.X_OK):
        from meshnode.engines.gate import GateError

        raise GateError("no_program", f"{name!r} is not an executable path nor a program in {runner.SEARCH_PATH}")
    return found


@asynccontextmanager
async def sandboxed(server: ServerSettings, home: Path, tail: Tail):
    folder = home / "mcp" / server.name
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # the server runs as nobody: its folder must be its own
        os.chown(folder, runner.NOBODY_UID, runner.NOBODY_UID)
    exe = [program(server.command[0]), *server.command[1:]]
    proc, leader = await sandbox.spawn(exe, str(folder), policy(server), b"", dict(server.env), interactive=True,
                                       read_only=server.read_only)
    tail.watch_exit()
    to_session, read = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        buffer = b""
        async with to_session:
            while True:
                chunk = await proc.stdout.receive_some(65536)
                if not chunk:
                    return
                buffer += chunk
                if len(buffer) > MAX_LINE and b"\n" not in buffer:
                    await to_session.send(ValueError(f"a message longer than {MAX_LINE} bytes"))
                    return
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            await to_session.send(exc)
                            continue
                        await to_session.send(SessionMessage(message))

    async def writer() -> None:
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await proc.stdin.send_all(data.encode())

    async def exited() -> None:
        tail.exited(await proc.wait())  # the supervisor passes on the command's status

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            nursery.start_soon(writer)
            nursery.start_soon(tail.read, proc.stderr)
            nursery.start_soon(exited)
            try:
                yield read, write
            finally:
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            await sandbox.stop(proc, leader)
