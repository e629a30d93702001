"""The control channel: a unix socket, one JSON request and answer per connection."""

from __future__ import annotations

import os
import stat

import pytest
import trio

from meshnode.net.control import ControlError, call
from meshnode.faces.control_server import serve_control
from meshnode.base.errors import MeshnodeError


async def handler(cmd: str, args: dict, face: str):
    if cmd == "echo":
        return args
    if cmd == "face":
        return face
    if cmd == "fail":
        raise MeshnodeError("nope", "it failed as asked")
    raise MeshnodeError("unknown_command", cmd)


async def test_request_response_errors_and_cleanup(tmp_path):
    path = tmp_path / "control.sock"
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_control, path, handler)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert await trio.to_thread.run_sync(call, path, "echo", {"a": [1, "x"]}) == {"a": [1, "x"]}
        with pytest.raises(ControlError) as info:
            await trio.to_thread.run_sync(call, path, "fail")
        assert (info.value.code, info.value.reason) == ("nope", "it failed as asked")
        # garbage on the socket gets a bad_request answer, and the server keeps serving
        stream = await trio.open_unix_socket(os.fspath(path))
        await stream.send_all(b"{not json\n")
        answer = b""
        while chunk := await stream.receive_some(1000):
            answer += chunk
        assert b"bad_request" in answer
        await stream.aclose()
        assert await trio.to_thread.run_sync(call, path, "echo", {}) == {}
        # the client says which of the person's faces asks (the CLI unless it says mcp), nothing else
        assert await trio.to_thread.run_sync(call, path, "face") == "cli"
        assert await trio.to_thread.run_sync(lambda: call(path, "face", face="mcp")) == "mcp"
        stream = await trio.open_unix_socket(os.fspath(path))
        await stream.send_all(b'{"cmd": "face", "face": "web"}\n')
        answer = b""
        while chunk := await stream.receive_some(1000):
            answer += chunk
        assert b"bad_request" in answer and b"face" in answer
        await stream.aclose()
        # a second server on the same socket is refused while the first answers
        with pytest.raises(ControlError) as info:
            await serve_control(path, handler)
        assert info.value.code == "node_running"
        nursery.cancel_scope.cancel()
    assert not path.exists()


def test_calling_a_node_that_is_not_running(tmp_path):
    with pytest.raises(ControlError) as info:
        call(tmp_path / "data" / "control.sock", "peers")
    assert info.value.code == "node_not_running"


async def test_a_stale_socket_file_is_replaced(tmp_path):
    import socket

    path = tmp_path / "control.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.fspath(path))
    s.close()  # a socket file nobody listens on, as a killed node leaves
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_control, path, handler)
        assert await trio.to_thread.run_sync(call, path, "echo", {"ok": 1}) == {"ok": 1}
        nursery.cancel_scope.cancel()
