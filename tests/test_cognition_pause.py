"""A person's pause of the cognitive cycle (protocols/web.md 4.4), in-process: paused, the loop
ticks no more (a tick request waits too); a tick in progress finishes; resume ticks again; the
pause is logged for the agent and kept across a restart."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import trio

from cyclelab import until
from meshnode.engines.cognition.cycle import Cycle
from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
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
        seen = []
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05, metrics=Metrics(), on_tick=seen.append)  # no LLM: outage ticks
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
            await until(lambda: seen and seen[-1]["tick"] > ticks, what="a tick after the resume, ended")
        assert [s["tick"] for s in seen[:2]] == [1, 2]  # on_tick got each tick's summary
        pauses = await store.read(log_rows, "cycle:pause")
        resumes = await store.read(log_rows, "cycle:resume")
        assert [p["by"] for p in pauses] == ["web"] and [r["by"] for r in resumes] == ["cli"]
        [timed] = [h for h in cycle.metrics.histograms() if h["name"] == "cycle_tick_seconds"]
        assert timed["count"] == len(seen)  # every tick that ended was observed (leaving may cut one short)
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


async def test_a_pause_whose_write_failed_is_not_half_applied(tmp_path):
    """The row could not be written (the database busy): the call fails, the cycle is not paused in
    memory only, and a second pause writes the row (so it outlives a restart)."""
    from meshnode.engines.cognition.tick_store import paused_of
    from meshnode.base.errors import MeshnodeError

    store = await Store.open(tmp_path / "mind.db")
    try:
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05, metrics=Metrics())
        real_write, failures = store.write, [1]

        async def flaky_write(fn, *a, **kw):
            if failures:
                failures.pop()
                raise MeshnodeError("db_busy", "the database is busy")
            return await real_write(fn, *a, **kw)

        store.write = flaky_write
        try:
            await cycle.pause("web")
        except MeshnodeError:
            pass
        else:
            raise AssertionError("the failed write was not reported")
        assert cycle.paused is False
        assert (await cycle.pause("web"))["paused"] is True
        assert await store.read(paused_of) == "web"
    finally:
        await store.aclose()


async def test_a_pause_during_a_tick_keeps_released_and_approved_commands_waiting(tmp_path):
    """The tick in progress finishes, and then nothing more: what a person released or approved
    before pausing waits for the resume (protocols/web.md 4.4)."""
    store = await Store.open(tmp_path / "mind.db")
    try:
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05)
        started, go, after_tick = trio.Event(), trio.Event(), []

        async def slow_tick():
            cycle.ticks += 1
            started.set()
            await go.wait()
            return {"tick": cycle.ticks, "mode": "normal"}

        async def released():
            after_tick.append("run_released")
            return []

        async def approved():
            after_tick.append("run_approved")

        cycle._tick, cycle.run_released, cycle._run_approved = slow_tick, released, approved
        async with running(store, cycle):
            await started.wait()
            await cycle.pause("test")  # mid-tick
            go.set()
            await until(lambda: parked(cycle), what="the loop to wait for the resume")
            assert after_tick == [], after_tick
            await cycle.resume("test")
            await until(lambda: "run_released" in after_tick, what="the released commands after the resume")
    finally:
        await store.aclose()


async def test_an_auxiliary_loop_waits_while_the_agent_is_paused(tmp_path):
    """A task's auxiliary loop asks an LLM too: while a person has paused the agent it starts no
    round (it waits for the resume)."""
    from meshnode.engines.cognition import auxiliary

    store = await Store.open(tmp_path / "mind.db")
    try:
        cycle = Cycle(store, KEY, now_ms, pause_s=0.05)
        rounds = []

        async def fake_loop(store_, key, clock, task_id, config, pause_s, *, until_resumed=None):
            if until_resumed is not None:
                await until_resumed()
            rounds.append(task_id)

        real = auxiliary.loop
        auxiliary.loop = fake_loop
        try:
            await cycle.pause("test")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(cycle._aux_loop, 7, {})
                await trio.testing.wait_all_tasks_blocked()
                assert rounds == []
                await cycle.resume("test")
            assert rounds == [7]
        finally:
            auxiliary.loop = real
    finally:
        await store.aclose()
