"""A container for everyone (a public note): by gossip when it fits one gossip message, else pushed
directly to each connected peer; the periodic sync carries it to the others either way.

py-libp2p corrupts gossip messages over ~64 KiB (``mesh_gossip.MAX_GOSSIP_BYTES``), while a note
may hold up to 64 KiB of text (``domain.notes.MAX_TEXT``): such a note is still written, and still
travels at once to the peers this node is connected to, by the exchange protocol's push (its frames
carry up to [peers] max_frame_bytes, 1 MiB by default). ``publish`` says which way it went, so the
person is told (issue 35: a large note once ended in an error although it was stored and synced).
"""

from __future__ import annotations

from typing import Awaitable, Callable, Iterable

import trio

from meshnode.base.container import Container
from meshnode.base.errors import MeshnodeError
from meshnode.net.mesh_gossip import MAX_GOSSIP_BYTES

PUSH_WAIT_S = 10.0  # how long a write waits for its direct pushes; the ones still going are left to sync
PUSHES_AT_ONCE = 8  # direct pushes in flight at once


async def publish(c: Container, *, gossip: Callable[[Container], Awaitable[None]],
                  push: Callable[[str, list[Container]], Awaitable[dict]], connected: Iterable[str],
                  metrics=None, wait_s: float = PUSH_WAIT_S) -> dict:
    """Gossip ``c``, or when it is larger than one gossip message push it to every ``connected``
    peer (at most ``wait_s`` in all). Returns ``{"by": "gossip"}`` or ``{"by": "push", "bytes",
    "gossip_max", "pushed": [DIDs that took it], "failed": [...], "later": [DIDs not answered in
    time]}``: the ones not reached get it at their next sync with this node or its peers."""
    size = len(c.to_bytes())
    if size <= MAX_GOSSIP_BYTES:
        await gossip(c)
        return {"by": "gossip"}
    report = {"by": "push", "bytes": size, "gossip_max": MAX_GOSSIP_BYTES,
              **await push_to(c, connected, push=push, metrics=metrics, wait_s=wait_s)}
    _count(metrics, "publish_pushed_instead_of_gossip")
    return report


async def push_to(c: Container, peers: Iterable[str], *, push: Callable[[str, list[Container]], Awaitable[dict]],
                  metrics=None, wait_s: float = PUSH_WAIT_S) -> dict:
    """Push ``c`` to each of ``peers`` (PUSHES_AT_ONCE at a time, at most ``wait_s`` in all):
    ``{"pushed": [DIDs that took it], "failed": [...], "later": [DIDs not answered in time]}``."""
    peers = sorted(set(peers))
    report = {"pushed": [], "failed": [], "later": []}
    limiter = trio.CapacityLimiter(PUSHES_AT_ONCE)

    async def one(did: str) -> None:
        async with limiter:
            try:
                ack = await push(did, [c])
            except (MeshnodeError, OSError) as exc:  # unreachable or refusing now: sync tries again later
                report["failed"].append(did)
                _count(metrics, "publish_push_failed", getattr(exc, "code", type(exc).__name__))
                return
        rejected = ack.get("rejected") if isinstance(ack, dict) else None
        report["failed" if rejected else "pushed"].append(did)

    with trio.move_on_after(wait_s):
        async with trio.open_nursery() as nursery:
            for did in peers:
                nursery.start_soon(one, did)
    report["later"] = [d for d in peers if d not in report["pushed"] and d not in report["failed"]]
    return report


def _count(metrics, name: str, reason: str | None = None) -> None:
    if metrics is not None:
        metrics.inc(name, **({"reason": str(reason)[:40]} if reason else {}))
