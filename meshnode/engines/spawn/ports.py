"""Free TCP ports for a child: chosen by the kernel (bind port 0), then checked again by binding
and listening (as the node checks its own port before it starts).

A port is only known free at the moment it is checked, and a stopped child holds none: so the
caller passes the ports already promised (the parent's, other children's) in ``avoid``.
"""

from __future__ import annotations

import socket

from meshnode.net.libp2p_fixes import port_is_free
from meshnode.base.errors import SpawnError

ATTEMPTS = 20


def free_port(host: str, avoid: set[int] = frozenset()) -> int:
    """A port on ``host`` nobody listens on and not in ``avoid``; SpawnError ``no_free_port``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for _ in range(ATTEMPTS):
        try:
            port = _kernel_port(family, host)
        except OSError as exc:
            raise SpawnError("no_free_port", f"cannot bind a port on {host}: {exc.strerror}") from None
        if port not in avoid and port_is_free(port, host):  # bound and listened on again
            return port
    raise SpawnError("no_free_port", f"no free TCP port on {host} after {ATTEMPTS} tries")


def _kernel_port(family: int, host: str) -> int:
    """The port the kernel gives a socket bound to port 0 (free now; the socket is closed at once)."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
