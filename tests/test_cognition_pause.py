"""A person's pause of the cognitive cycle (protocols/web.md 4.4), in-process: paused, the loop
ticks no more (a tick request waits too); a tick in progress finishes; resume ticks again; the
pause is logged for the agent and kept across a restart."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import trio

from cyclelab import until
from meshnode.cognition.cycle import Cycle
from meshnode.container import now_ms
from meshnode.identity.keys import NodeKey
from meshnode.metrics import Metrics
from meshnode.store.service import Store

KEY = NodeKey(bytes(32))


def parked(cycle: Cycle) -> bool:
    """The loop waits for the resume (nothing else runs)."""
    return cycle.resumed.statistics().tasks_waiting == 1


@asynccontextmanager
async def running(store, cycle: Cycle):
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cycle.run)
        yield cycle
        nursery.cancel_scope.cancel()


def log_rows(db, name: str) -> list[dict]:
    return [json.loads(v) for (v,) in db.conn.execute("SELECT value FROM process_log WHERE name = ? ORDER BY id",
                                                      (name,))]


async def test_paused_the_cycle_does_not_tick_and_resumed_it_ticks_again(tmp_path):
    store = await Store.open(tmp_path / "mind.db")
    try:
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05, metrics=Metrics())  # no LLM: quick core-outage ticks
        seen = []
        cycle.on_tick = seen.append
        async with running(store, cycle):
            await until(lambda: cycle.ticks >= 2, what="two ticks")
            status = await cycle.pause("web")
            assert status["paused"] is True and status["paused_by"] == "web"
            await until(lambda: parked(cycle), what="the loop to wait for the resume")
            ticks = cycle.ticks
            cycle.wake.set()  # what `meshnode tick` does: while paused, nothing
            await trio.testing.wait_all_tasks_blocked()
            assert parked(cycle) and cycle.ticks == ticks
            assert (await cycle.pause("cli"))["paused_by"] == "web"  # pausing again changes nothing
            await cycle.resume("cli")
            assert cycle.status()["paused"] is False
            await until(lambda: cycle.ticks > ticks, what="a tick after the resume")
        assert [s["tick"] for s in seen[:2]] == [1, 2]  # on_tick got each tick's summary
        pauses = await store.read(log_rows, "cycle:pause")
        resumes = await store.read(log_rows, "cycle:resume")
        assert [p["by"] for p in pauses] == ["web"] and [r["by"] for r in resumes] == ["cli"]
        [timed] = [h for h in cycle.metrics.histograms() if h["name"] == "cycle_tick_seconds"]
        assert timed["count"] == cycle.ticks  # every tick observed
    finally:
        await store.aclose()


async def test_a_tick_in_progress_finishes_and_then_the_loop_waits(tmp_path):
    store = await Store.open(tmp_path / "mind.db")
    try:
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05)
        started, go, finished = trio.Event(), trio.Event(), []

        async def slow_tick():
            cycle.ticks += 1
            started.set()
            await go.wait()
            finished.append(cycle.ticks)
            return {"tick": cycle.ticks, "mode": "normal"}

        cycle._tick = slow_tick
        async with running(store, cycle):
            await started.wait()
            await cycle.pause("test")  # mid-tick
            assert not finished
            go.set()
            await until(lambda: parked(cycle), what="the loop to wait for the resume")
            assert finished == [1] and cycle.ticks == 1
    finally:
        await store.aclose()


async def test_the_pause_outlives_a_restart(tmp_path):
    store = await Store.open(tmp_path / "mind.db")
    try:
        first = Cycle(store, KEY, now_ms, pause_s=0.05)
        async with running(store, first):
            await until(lambda: first.ticks >= 1, what="a tick")
            await first.pause("cli")
            await until(lambda: parked(first), what="the pause")
        again = Cycle(store, KEY, now_ms, pause_s=0.05)
        async with running(store, again):
            await until(lambda: parked(again), what="the restarted loop to stay paused")
            assert again.status()["paused"] and again.paused_by == "cli" and again.ticks == first.ticks
            await again.resume("cli")
            await until(lambda: again.ticks > first.ticks, what="a tick after the resume")
    finally:
        await store.aclose()
