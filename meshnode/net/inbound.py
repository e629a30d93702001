"""Inbound connections at accept time: two mends to py-libp2p 0.8.1's swarm.

1. **Slots given back.** The swarm takes one of its inbound slots (250 at the
   default ``[net] max_connections``) per accepted connection and keeps its
   handler task waiting until the whole swarm stops
   (``_do_handle_inbound_connection`` ends on ``manager.wait_finished()``), so
   the slot, the task and the raw connection are never released: after 250
   inbound connections in a node's lifetime, no new peer can connect from
   anywhere. Measured: 300 identities that connect and leave lock every new
   peer out. Here the handler instead ends when its connection has shut down.
2. **Refused before the handshake.** An address refused by the node's own
   rules (``admit(host)`` returns a reason) is closed as it is accepted,
   before the Noise handshake and identify are paid for. A connection whose
   Noise or multistream handshake fails or times out is reported
   (``on_failed_handshake(ip)``): handshake-level abuse of its address.

Both patch one swarm object (private API, verified against 0.8.1).
``connection_limits`` sizes the swarm from ``[net] max_connections``.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Callable

import trio

log = logging.getLogger("meshnode.net")

# py-libp2p 0.8.1's ConnectionConfig defaults: max_connections, min_connections, low and high watermark
LIBP2P_LIMITS = (300, 50, 100, 300)
_ACCEPTING = contextvars.ContextVar("meshnode_accepting", default=False)  # set in an accept handler's task


class _ConnectionOver(Exception):
    """Raised out of the upgrade once its connection has shut down: the handler then cleans up and
    returns, which releases its inbound slot (py-libp2p catches it and logs it at debug)."""


def mend_inbound(swarm, admit: Callable[[tuple], str | None], on_refused: Callable[[str, str], None],
                 on_failed_handshake: Callable[[str], None] = lambda ip: None) -> None:
    """Patch ``swarm``: refuse an accepted connection when ``admit((ip, port))`` gives a reason
    (``on_refused(ip, reason)`` is told), tell ``on_failed_handshake(ip)`` of a failed one, and end
    each inbound handler when its connection is over."""
    handle = swarm._handle_inbound_connection
    upgrade = swarm.upgrade_inbound_raw_conn

    async def handle_inbound(read_write_closer, maddr) -> None:
        address = remote_address(read_write_closer)
        host = address[0] if address else None
        reason = admit(address) if address else None
        if reason is not None:
            on_refused(host, reason)
            with trio.move_on_after(1):
                try:
                    await read_write_closer.close()
                except Exception as exc:  # already gone: nothing left to refuse
                    log.debug("closing a refused connection from %s: %s", host, exc)
            return
        _ACCEPTING.set(True)
        await handle(read_write_closer, maddr)

    async def upgrade_until_over(raw_conn, maddr):
        address = remote_address(raw_conn)
        try:
            muxed_conn = await upgrade(raw_conn, maddr)
        except Exception as exc:
            if address and _ACCEPTING.get() and failed_handshake(exc):
                on_failed_handshake(address[0])
            raise
        shut_down = getattr(muxed_conn, "event_shutting_down", None)
        if shut_down is None or not _ACCEPTING.get():  # not yamux, or not the accept path (hole punching)
            return muxed_conn
        await shut_down.wait()
        raise _ConnectionOver("the inbound connection has shut down")

    swarm._handle_inbound_connection = handle_inbound
    swarm.upgrade_inbound_raw_conn = upgrade_until_over


def failed_handshake(exc: BaseException) -> bool:
    """Whether py-libp2p 0.8.1's inbound upgrade failed for the peer's part: the security (Noise) or
    muxer negotiation failed, or did not finish within ``inbound_upgrade_timeout`` (not: the node is
    at its connection limit)."""
    from libp2p.transport.exceptions import MuxerUpgradeFailure, SecurityUpgradeFailure

    cause = exc.__cause__
    return (isinstance(exc, (SecurityUpgradeFailure, MuxerUpgradeFailure))
            or isinstance(cause, (SecurityUpgradeFailure, MuxerUpgradeFailure))
            or "upgrade timeout" in str(exc))


def connection_limits(max_connections: int) -> dict[str, int]:
    """py-libp2p's connection limits scaled to ``max_connections`` (its own values at 300): the
    ConnectionConfig fields. Inbound connections get ``max_connections - min_connections`` slots."""
    most, least, low, high = LIBP2P_LIMITS
    return {"max_connections": max_connections, "min_connections": max_connections * least // most,
            "low_watermark": max_connections * low // most, "high_watermark": max_connections * high // most}


def inbound_slots(max_connections: int) -> int:
    """How many inbound connections py-libp2p admits at a time under ``connection_limits``."""
    limits = connection_limits(max_connections)
    return limits["max_connections"] - limits["min_connections"]


def remote_address(conn) -> tuple | None:
    """(ip, port) of a raw, secured or muxed connection (py-libp2p 0.8.1: ``get_remote_address()``),
    or None for one being torn down."""
    try:
        address = conn.get_remote_address()
    except Exception:  # a connection being torn down
        return None
    return tuple(address[:2]) if address else None
