"""Free TCP ports for a child: chosen by the kernel (bind port 0), then checked again by binding."""

from __future__ import annotations


def free_port(host: str, avoid: set[int] = frozenset()) -> int:
    """A port on ``host`` nobody listens on and not in ``avoid``; SpawnError ``no_free_port``."""
    raise NotImplementedError
