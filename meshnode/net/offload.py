"""Decoding and verifying off the event loop: a bounded worker pool with a fair queue.

Theory of operation
-------------------
The node's event loop serves control requests, heartbeats, pings and every
peer; a large input decoded on it stalls all of them. ``Offload.run`` runs
such work in worker threads (``trio.to_thread``): meshnode's own Python walk
is preempted by the GIL switch interval, and PyNaCl and hashlib release the
GIL, so the loop keeps turning while a job runs. Input under ``inline_bytes``
*and* of at most ``inline_items`` CBOR items (``count_items``, a pre-scan bounded
by that count) is decoded on the loop: a thread hop costs ~0.15 ms here, as
much as decoding and verifying an 8 KiB container of ordinary items; but one
byte can be an item, and 8 KiB of empty arrays took 11.9 ms. After each inline
job the loop is given a checkpoint, so a batch of them yields.

``FairQueue`` (sans-IO) decides who runs: at most ``workers`` jobs at once and
``max_waiting`` waiting. When the queue is full, the job of the peer that has
spent the most recently (``cost_of``: the Mesh gives the share of its
budgets spent, the most over peer, address and subnet) is refused (``OffloadBusy``), the
newcomer's own if it is that peer; waiters are served thriftiest peer first,
in arrival order between equals. Heartbeats and pings never go through it.

Known peers first (issue 36): ``is_known`` ranks every job of a known peer
(own key, friend, trusted, committee) before any stranger's, whatever their
costs: a known peer's job is served before all waiting strangers' and, when
the queue is full, a stranger's job is refused to make room for it (a
stranger's never takes a known peer's place).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import trio

from meshnode.base.container.cbor import HARD_MAX_DEPTH
from meshnode.base.container.errors import ContainerError
from meshnode.base.container.prescan import scan
from meshnode.base.errors import MeshnodeError

INLINE_BYTES = 8 * 1024
INLINE_ITEMS = 512  # ~0.8 ms of decoding at most on the loop; the scan that counts them costs ~0.09 ms


def count_items(data: bytes, max_items: int = INLINE_ITEMS) -> int | None:
    """How many CBOR items ``data`` holds, or None when more than ``max_items`` (the scan stops there,
    so its cost is bounded). Input the scan refuses otherwise is refused by the decoder as early: the
    items seen up to the fault are what it costs."""
    try:
        return scan(data, max_items, HARD_MAX_DEPTH)
    except ContainerError as exc:
        return None if exc.code == "too_many_items" else max_items


class OffloadBusy(MeshnodeError):
    """The worker pool's queue is full and this peer's job is the one left out."""

    def __init__(self, peer: str):
        super().__init__("busy", f"the node is busy decoding; {peer}'s work waits too long, try again")
        self.peer = peer


@dataclass(eq=False)
class Ticket:
    peer: str
    order: int
    running: bool = False
    refused: bool = False
    wake: Any = None  # the driver's event; the queue never touches it


@dataclass
class FairQueue:
    workers: int = 2
    max_waiting: int = 64
    cost_of: Callable[[str], float] = lambda peer: 0.0
    is_known: Callable[[str], bool] = lambda peer: False
    running: int = 0
    waiting: list[Ticket] = field(default_factory=list)
    _order: Any = field(default_factory=itertools.count)

    def submit(self, peer: str) -> tuple[Ticket, Ticket | None]:
        """A ticket for ``peer``'s job, running at once when a worker is free, and the ticket refused
        to make room (maybe the new one itself: then it is marked refused), or None."""
        ticket = Ticket(peer, next(self._order))
        if self.running < self.workers:
            self.running += 1
            ticket.running = True
            return ticket, None
        if len(self.waiting) < self.max_waiting:
            self.waiting.append(ticket)
            return ticket, None
        costly = max(self.waiting, key=lambda t: (*self._rank(t.peer), t.order))
        if self._rank(ticket.peer) >= self._rank(costly.peer):
            ticket.refused = True
            return ticket, ticket
        self.waiting.remove(costly)
        costly.refused = True
        self.waiting.append(ticket)
        return ticket, costly

    def done(self, ticket: Ticket) -> Ticket | None:
        """``ticket`` finished (or gave up waiting); the ticket that runs next, if any."""
        if not ticket.running:
            if ticket in self.waiting:
                self.waiting.remove(ticket)
            return None
        ticket.running = False
        if not self.waiting:
            self.running -= 1
            return None
        nxt = min(self.waiting, key=lambda t: (*self._rank(t.peer), t.order))
        self.waiting.remove(nxt)
        nxt.running = True
        return nxt


    def _rank(self, peer: str) -> tuple[bool, float]:
        """Lower is served first and refused last: known peers before strangers, then the thriftiest."""
        return not self.is_known(peer), self.cost_of(peer)


def timed(fn: Callable, *args) -> tuple[Any, float]:
    """``fn(*args)`` and the CPU time it took this thread, in ms (an exception carries it as .cost_ms)."""
    started = time.thread_time()
    try:
        result = fn(*args)
    except Exception as exc:
        exc.cost_ms = (time.thread_time() - started) * 1000
        raise
    return result, (time.thread_time() - started) * 1000


class Offload:
    """The driver of a FairQueue over trio.to_thread (one per Mesh)."""

    def __init__(self, workers: int = 2, max_waiting: int = 64, inline_bytes: int = INLINE_BYTES,
                 cost_of: Callable[[str], float] = lambda peer: 0.0, metrics=None,
                 inline_items: int = INLINE_ITEMS, is_known: Callable[[str], bool] = lambda peer: False):
        self.queue = FairQueue(workers, max_waiting, cost_of, is_known)
        self.inline_bytes = inline_bytes
        self.inline_items = inline_items
        self.metrics = metrics

    async def run(self, peer: str, nbytes: int, fn: Callable, *args, items: int | None = None,
                  inline_bytes: int | None = None) -> tuple[Any, float]:
        """``fn(*args)`` for ``peer``'s input of ``nbytes`` and ``items`` CBOR items (None: not counted,
        or more than ``count_items`` counts), with its CPU cost in ms: inline when small in both (under
        ``inline_bytes``, by default the pool's), else in a worker once the fair queue lets it. Raises
        OffloadBusy when refused; an exception of ``fn`` carries its cost as ``.cost_ms``. Cancelled
        while waiting, the job leaves the queue."""
        below = self.inline_bytes if inline_bytes is None else inline_bytes
        if nbytes < below and items is not None and items <= self.inline_items:
            try:
                return timed(fn, *args)
            finally:
                await trio.lowlevel.checkpoint()  # a batch of inline jobs lets the loop turn between them
        ticket, refused = self.queue.submit(peer)
        if refused is not None:
            self._count("offload_refused")
            if refused.wake is not None:
                refused.wake.set()
            if refused is ticket:
                raise OffloadBusy(peer)
        if not ticket.running:
            ticket.wake = trio.Event()
            waited = trio.current_time()
            try:
                await ticket.wake.wait()
            except BaseException:
                self._hand_on(ticket)
                raise
            self._count("offload_queue_wait_ms", int((trio.current_time() - waited) * 1000))
            if ticket.refused:
                raise OffloadBusy(peer)
        self._count("offload_jobs")
        try:
            return await trio.to_thread.run_sync(timed, fn, *args)
        finally:
            self._hand_on(ticket)

    def _hand_on(self, ticket: Ticket) -> None:
        nxt = self.queue.done(ticket)
        if nxt is not None and nxt.wake is not None:
            nxt.wake.set()

    def _count(self, name: str, n: int = 1) -> None:
        if self.metrics is not None:
            self.metrics.inc(name, n)
