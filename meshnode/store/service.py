"""The store as trio code sees it: SQLite work runs in worker threads.

One writer connection, used by one thread at a time (a CapacityLimiter of 1),
so writes are serialized in the order they were asked for; two reader
connections beside it (WAL lets them read while the writer writes): one for
the person's reads and one for everything else, so what the person asks
(``status``, a page of notes) never waits in line behind the reads a swarm of
peers causes (``person_first``; the app layer's dispatch sets it for the
person's actions). A write that
has started is not abandoned when its caller is cancelled: it finishes (and
commits) before the cancellation is delivered, so an acknowledged write is
never half done.

aiosqlite is not an option: it is asyncio-only and raises under trio.

With a ``metrics`` registry, each ``write`` observes ``store_write_wait_seconds``: the time from
the call until the writer thread starts it (the queue behind other writes), measured in the
worker thread and recorded back on the trio thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from pathlib import Path
from typing import Callable, TypeVar

import trio

from meshnode.store.database import BUSY_TIMEOUT_MS, Database
from meshnode.store.hooks import StoreHooks

BACKGROUND_BUSY_MS = 250

T = TypeVar("T")

_PERSON_LANE: contextvars.ContextVar[bool] = contextvars.ContextVar("meshnode_store_person_lane", default=False)


@contextlib.contextmanager
def person_first():
    """Within it, this task's reads (and those of tasks it starts) use the person's reader connection."""
    token = _PERSON_LANE.set(True)
    try:
        yield
    finally:
        _PERSON_LANE.reset(token)


class Store:
    def __init__(self, writer: Database, reader: Database, person_reader: Database, metrics=None):
        self.metrics = metrics  # meshnode.base.metrics.Metrics or None (not measured)
        self._writer = writer
        self._reader = reader
        self._person_reader = person_reader
        self._write_limiter = trio.CapacityLimiter(1)
        self._read_limiter = trio.CapacityLimiter(1)
        self._person_read_limiter = trio.CapacityLimiter(1)
        self.path = writer.path
        self.version = writer.version

    @classmethod
    async def open(cls, path: Path, *, create: bool = True, metrics=None, hooks: StoreHooks | None = None) -> "Store":
        """The three connections; ``hooks`` as for ``Database`` (the process default unless given)."""
        writer = await trio.to_thread.run_sync(lambda: Database(path, create=create, hooks=hooks))
        readers: list[Database] = []
        try:
            for _ in range(2):
                readers.append(await trio.to_thread.run_sync(
                    lambda: Database(path, create=False, do_migrate=False, hooks=hooks)))
        except BaseException:
            for db in (*readers, writer):
                db.close()
            raise
        return cls(writer, *readers, metrics=metrics)

    async def write(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """Run ``fn(database, *args, **kwargs)`` on the writer connection."""
        if self.metrics is None:
            return await trio.to_thread.run_sync(functools.partial(fn, self._writer, *args, **kwargs),
                                                 limiter=self._write_limiter)
        asked, started = time.monotonic(), []

        def run():
            started.append(time.monotonic())
            return fn(self._writer, *args, **kwargs)

        try:
            return await trio.to_thread.run_sync(run, limiter=self._write_limiter)
        finally:
            if started:  # not when cancelled while still queued
                self.metrics.observe("store_write_wait_seconds", started[0] - asked)

    async def write_background(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """A write no one waits on (the mind's logs, reputation rounds): while another process
        holds the database it gives up after BACKGROUND_BUSY_MS with a StoreError, and is
        tried again next time, so it never holds up a stop."""
        def run(db: Database) -> T:
            db.conn.execute(f"PRAGMA busy_timeout={BACKGROUND_BUSY_MS}")
            try:
                return fn(db, *args, **kwargs)
            finally:
                db.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

        return await trio.to_thread.run_sync(run, self._writer, limiter=self._write_limiter)

    async def read(self, fn: Callable[..., T], *args, **kwargs) -> T:
        """Run ``fn(database, *args, **kwargs)`` on a reader connection: the person's within
        ``person_first``, else the other."""
        if _PERSON_LANE.get():
            reader, limiter = self._person_reader, self._person_read_limiter
        else:
            reader, limiter = self._reader, self._read_limiter
        return await trio.to_thread.run_sync(functools.partial(fn, reader, *args, **kwargs), limiter=limiter)

    async def aclose(self) -> None:
        async with self._write_limiter, self._read_limiter, self._person_read_limiter:
            await trio.to_thread.run_sync(self._reader.close)
            await trio.to_thread.run_sync(self._person_reader.close)
            await trio.to_thread.run_sync(self._writer.close)

    async def __aenter__(self) -> "Store":
        return self

    async def __aexit__(self, *exc) -> None:
        with trio.CancelScope(shield=True):
            await self.aclose()
