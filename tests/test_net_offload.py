"""The worker pool's fair queue (pure) and its driver over trio.to_thread."""

from __future__ import annotations

import threading
import time

import pytest
import trio
import trio.testing
from hypothesis import given, settings, strategies as st

from meshnode.base.container import cbor
from meshnode.net.offload import INLINE_ITEMS, FairQueue, Offload, OffloadBusy, count_items


def test_a_full_queue_refuses_the_most_expensive_peer_and_serves_the_thriftiest_first():
    costs = {"cheap": 1.0, "mid": 5.0, "hog": 50.0}
    q = FairQueue(workers=1, max_waiting=2, cost_of=costs.get)
    running, _ = q.submit("mid")
    assert running.running
    hog, _ = q.submit("hog")
    mid, _ = q.submit("mid")
    cheap, refused = q.submit("cheap")  # full: the hog's job makes room
    assert refused is hog and hog.refused and not cheap.refused
    hog2, refused = q.submit("hog")  # the hog itself, when it is the most expensive
    assert refused is hog2
    assert q.done(running) is cheap  # the cheapest waiter first
    assert q.done(cheap) is mid
    assert q.done(mid) is None and q.running == 0


@settings(max_examples=300, deadline=None)
@given(workers=st.integers(1, 3), max_waiting=st.integers(1, 5),
       ops=st.lists(st.one_of(st.tuples(st.just("submit"), st.integers(0, 5)),
                              st.tuples(st.just("done"), st.integers(0, 20))), max_size=80))
def test_the_queue_never_exceeds_its_bounds_and_refuses_the_costliest(workers, max_waiting, ops):
    cost = {f"p{i}": float(i) for i in range(6)}
    q = FairQueue(workers, max_waiting, cost_of=cost.get)
    running, live = [], []
    for op, n in ops:
        if op == "submit":
            before = list(q.waiting)
            ticket, refused = q.submit(f"p{n}")
            if refused is not None:  # the refused one cost at least as much as any that stays
                assert all(cost[t.peer] <= cost[refused.peer] for t in q.waiting)
                assert refused is ticket or refused in before
            (running if ticket.running else live).append(ticket)
        elif running:
            ticket = running.pop(n % len(running))
            nxt = q.done(ticket)
            if nxt is not None:
                assert all(cost[nxt.peer] <= cost[t.peer] for t in q.waiting)
                running.append(nxt)
        assert q.running <= workers and len(q.waiting) <= max_waiting
        assert q.running == len(running)
        assert not q.waiting or q.running == workers  # nobody waits while a worker is free


def test_waiting_jobs_run_in_threads_and_a_cancelled_waiter_leaves_the_queue():
    async def main():
        offload = Offload(workers=1, max_waiting=1, inline_bytes=10)
        gate = threading.Event()
        threads = []

        def job(x):
            threads.append(threading.get_ident())
            gate.wait(5)
            return x * 2

        async with trio.open_nursery() as nursery:
            results = []

            async def run(x):
                results.append((await offload.run("a", 100, job, x))[0])

            nursery.start_soon(run, 1)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.05):  # gives up while waiting: its place is freed
                await offload.run("b", 100, job, 2)
            assert offload.queue.waiting == []
            nursery.start_soon(run, 3)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(OffloadBusy):  # full, and "a" costs no more than the newcomer
                await offload.run("c", 100, job, 4)
            gate.set()
        assert sorted(results) == [2, 6]
        assert threading.get_ident() not in threads
        assert offload.queue.running == 0
        value, cost = await offload.run("a", 5, lambda: sum(range(1000)), items=1)  # small: inline
        assert value == 499500 and cost >= 0

    trio.run(main)


def test_the_loop_keeps_turning_while_a_worker_decodes():
    """A job that holds a worker for 300 ms of pure Python leaves the loop turning meanwhile."""
    ticks = []

    def busy():
        ticks.append("job started")
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        ticks.append("job ended")

    async def main():
        offload = Offload(workers=1, inline_bytes=0)
        async with trio.open_nursery() as nursery:
            async def tick():
                while True:
                    await trio.sleep(0.01)
                    ticks.append("tick")

            nursery.start_soon(tick)
            _, cost = await offload.run("p", 1, busy)
            nursery.cancel_scope.cancel()
        assert cost >= 250
        during = ticks[ticks.index("job started"):ticks.index("job ended")]
        assert during.count("tick") >= 3, ticks  # inline, the loop could not turn at all while it ran

    trio.run(main)


def test_small_input_of_many_items_goes_to_a_worker_and_inline_jobs_yield():
    empty_arrays = cbor.encode([[]] * 4000)  # 4 KiB, 4,001 items: under inline_bytes, costly to decode
    assert len(empty_arrays) < 8 * 1024 and count_items(empty_arrays) is None
    assert count_items(cbor.encode({"n": 1})) == 3 and count_items(b"\xff") == INLINE_ITEMS

    async def main():
        offload = Offload(workers=1)
        threads = []
        job = lambda: threads.append(threading.get_ident())  # noqa: E731
        await offload.run("p", len(empty_arrays), job, items=count_items(empty_arrays))
        assert threads[-1] != threading.get_ident()  # off the loop
        await offload.run("p", 10, job, items=3)
        assert threads[-1] == threading.get_ident()  # small in both: inline
        others_ran = []

        async def other():
            others_ran.append(True)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            for _ in range(50):  # a batch of inline jobs and nothing else awaited
                if others_ran:
                    break
                await offload.run("p", 10, job, items=3)
            assert others_ran  # the inline jobs gave the loop checkpoints

    trio.run(main)
