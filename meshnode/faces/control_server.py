"""The node's side of the control channel (``control`` has the protocol and the CLI's client)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, Awaitable, Callable

import trio

from meshnode.net.control import HANDLER_TIMEOUT, MAX_REQUEST, MAX_SOCKET_PATH, ControlError
from meshnode.base.errors import MeshnodeError

Handler = Callable[[str, dict, str], Awaitable[Any]]
FACES = ("cli", "mcp")  # who may speak on the socket: the person, through the CLI or `meshnode mcp`


async def serve_control(path: Path, handler: Handler, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Listen on ``path`` until cancelled; ``handler(cmd, args, face)`` returns the result or
    raises MeshnodeError (``face``: which of the person's clients asks, FACES). Refuses to start while another node answers on the socket."""
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ControlError("control_path_too_long",
                           f"the control socket path {path} is too long for a unix socket; use a shorter home")
    if path.exists() or path.is_symlink():
        if _answers(path):
            raise ControlError("node_running", f"another node is already running on {path.parent}")
        path.unlink()  # left behind by a node that did not stop cleanly
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o077)
    try:
        await sock.bind(os.fspath(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(16)
    listener = trio.SocketListener(sock)
    try:
        async with listener:
            task_status.started()
            async with trio.open_nursery() as nursery:
                while True:
                    stream = await listener.accept()
                    nursery.start_soon(_handle, stream, handler)
    finally:
        with trio.CancelScope(shield=True):
            try:
                path.unlink()
            except FileNotFoundError:
                pass


async def _handle(stream: trio.SocketStream, handler: Handler) -> None:
    async with stream:
        try:
            with trio.fail_after(HANDLER_TIMEOUT):
                request = await _read_request(stream)
                cmd, args, face = _parse(request)
                try:
                    result = await handler(cmd, args, face)
                    response = {"ok": True, "result": result}
                except MeshnodeError as exc:
                    response = {"ok": False, "code": exc.code, "reason": exc.reason}
                await stream.send_all(json.dumps(response).encode("utf-8") + b"\n")
        except ControlError as exc:
            await _try_send(stream, {"ok": False, "code": exc.code, "reason": exc.reason})
        except trio.TooSlowError:
            await _try_send(stream, {"ok": False, "code": "timeout",
                                     "reason": f"the node did not finish within {HANDLER_TIMEOUT:.0f} s"})
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away; nothing to answer


async def _try_send(stream: trio.SocketStream, response: dict) -> None:
    try:
        await stream.send_all(json.dumps(response).encode("utf-8") + b"\n")
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _read_request(stream: trio.SocketStream) -> bytes:
    data = bytearray()
    while b"\n" not in data:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise ControlError("request_too_large", f"control requests are at most {MAX_REQUEST} bytes")
    return bytes(data.split(b"\n", 1)[0])


def _parse(raw: bytes) -> tuple[str, dict, str]:
    try:
        request = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ControlError("bad_request", "a control request is one JSON object on one line") from None
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        raise ControlError("bad_request", "a control request needs a string 'cmd'")
    args = request.get("args", {})
    if not isinstance(args, dict):
        raise ControlError("bad_request", "'args' must be an object")
    face = request.get("face", "cli")
    if face not in FACES:
        raise ControlError("bad_request", f"'face' is one of {', '.join(FACES)}")
    return request["cmd"], args, face


def _answers(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        s.close()
