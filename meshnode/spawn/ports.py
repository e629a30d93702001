"""Free TCP ports for a child: chosen by the kernel (bind port 0), then checked again by binding.

A port is only known free at the moment it is checked, and a stopped child holds none: so the
caller passes the ports already promised (the parent's, other children's) in ``avoid``.
"""

from __future__ import annotations

import socket

from meshnode.spawn.model import SpawnError

ATTEMPTS = 20


def free_port(host: str, avoid: set[int] = frozenset()) -> int:
    """A port on ``host`` nobody listens on and not in ``avoid``; SpawnError ``no_free_port``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(ATTEMPTS):
        try:
            port = _kernel_port(family, host)
        except OSError as exc:
            raise SpawnError("no_free_port", f"cannot bind a port on {host}: {exc.strerror}") from None
        if port not in avoid and _bindable(family, host, port):
            return port
    raise SpawnError("no_free_port", f"no free TCP port on {host} after {ATTEMPTS} tries")


def _kernel_port(family: int, host: str) -> int:
    """The port the kernel gives a socket bound to port 0 (free now; the socket is closed at once)."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _bindable(family: int, host: str, port: int) -> bool:
    """The port binds and listens without SO_REUSEADDR (so no listener and no leftover holds it)."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
            s.listen()
            return True
        except OSError:
            return False
