"""The control channel: how CLI commands talk to a running node.

A unix socket in the node's data directory (mode 0600, so only its owner can
connect), one JSON request per connection, one JSON response back:

    {"cmd": "peers", "args": {}, "face": "cli"}  ->  {"ok": true, "result": ...}
                                                 or  {"ok": false, "code": "...", "reason": "..."}

A second process never opens the node's database while it runs; it asks the
node. Requests are size-limited and validated like any other input.

This module is the client's side (blocking, no trio: a CLI command that asks a running node
loads little); the node's side is ``control_server``.
"""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path
from typing import Any

from meshnode.base.errors import MeshnodeError

SOCKET_NAME = "control.sock"
MAX_REQUEST = 4 * 1024 * 1024
MAX_RESPONSE = 16 * 1024 * 1024
MAX_SOCKET_PATH = 104
HANDLER_TIMEOUT = 90.0  # longer than any mesh operation's own timeouts  # sun_path is 108 bytes on Linux, 104 on BSDs

class ControlError(MeshnodeError):
    """A control request failed, or the node could not be reached."""


def socket_path(data_dir: Path) -> Path:
    return data_dir / SOCKET_NAME


def call(path: Path, cmd: str, args: dict | None = None, timeout: float = 100.0, face: str = "cli") -> Any:
    """Blocking client for the CLI: send one request, return ``result`` or raise ControlError.
    ``face``: which of the person's clients asks (``cli``, or ``mcp`` for ``meshnode mcp``)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            s.connect(os.fspath(path))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
                raise ControlError("node_not_running",
                                   f"no running node at {path.parent.parent} (start it with `meshnode start`)") from None
            raise ControlError("control_unreachable", f"cannot reach the node at {path}: {exc.strerror}") from None
        s.sendall(json.dumps({"cmd": cmd, "args": args or {}, "face": face}).encode("utf-8") + b"\n")
        s.shutdown(socket.SHUT_WR)
        data = bytearray()
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_RESPONSE:
                raise ControlError("response_too_large", "the node's answer is too large")
    except socket.timeout:
        raise ControlError("control_timeout", f"the node did not answer within {timeout:.0f} s") from None
    finally:
        s.close()
    try:
        response = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ControlError("bad_response", "the node's answer is not JSON") from None
    if not isinstance(response, dict) or "ok" not in response:
        raise ControlError("bad_response", "the node's answer has no 'ok'")
    if not response["ok"]:
        raise ControlError(str(response.get("code", "error")), str(response.get("reason", "failed")))
    return response.get("result")
