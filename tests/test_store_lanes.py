"""The person's reads have a reader connection of their own: a read the mesh holds up (a
swarm's lookups in line) never makes the person's ``status`` or page of notes wait."""

from __future__ import annotations

import threading

import trio

from meshnode.app.actor import AGENT, person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Store
from meshnode.store.service import person_first


async def _held_read(store: Store, release: threading.Event, started: trio.Event, nursery) -> None:
    """A read on the shared lane that holds its connection until ``release`` is set."""
    token = trio.lowlevel.current_trio_token()

    def hold(db):
        trio.from_thread.run_sync(started.set, trio_token=token)
        release.wait(30)
        return db.counts()

    nursery.start_soon(store.read, hold)
    with trio.fail_after(10):
        await started.wait()


async def test_a_person_read_passes_a_held_mesh_read(tmp_path):
    async with await Store.open(tmp_path / "lanes.db") as store, trio.open_nursery() as nursery:
        release = threading.Event()
        try:
            await _held_read(store, release, trio.Event(), nursery)
            with person_first(), trio.fail_after(10):
                assert isinstance(await store.read(lambda db: db.counts()), dict)
            # and without the person's lane, a read waits its turn behind the held one
            with trio.move_on_after(0.3) as waited:
                await store.read(lambda db: db.counts())
            assert waited.cancelled_caught
        finally:
            release.set()


async def test_dispatch_puts_the_person_in_their_lane_and_no_one_else(tmp_path):
    async with await Store.open(tmp_path / "lanes.db") as store, trio.open_nursery() as nursery:
        app = App(store, NodeKey.generate(), clock=lambda: 0)
        release = threading.Event()
        try:
            await _held_read(store, release, trio.Event(), nursery)
            with trio.fail_after(10):  # a page of notes, asked by the person: answered at once
                assert await dispatch(app, person("cli"), "notes", {}) is not None
            with trio.move_on_after(0.3) as waited:  # asked by the agent: in line behind the held read
                await dispatch(app, AGENT, "notes", {})
            assert waited.cancelled_caught
        finally:
            release.set()
