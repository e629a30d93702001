"""sims/engine.py: the calendar queue runs events in time order and ties in scheduling order,
as the heap of (time, sequence) it replaced did, including events scheduled for the current
millisecond while it runs."""

from __future__ import annotations

import heapq
import random

from sims.engine import Loop


def test_events_run_in_time_order_and_ties_in_scheduling_order():
    loop, ran, rng = Loop(), [], random.Random(7)
    expected, seq = [], 0

    def event(tag):
        nonlocal seq
        ran.append((loop.now, tag))
        if tag < 300:  # events schedule more, some for this very millisecond
            for _ in range(2):
                delay = rng.choice([0, 0, 1, 5, 40])
                child = 1000 + len(expected)
                expected.append(None)
                if delay == 0:
                    loop.at(loop.now, event, child)
                else:
                    loop.after(delay, event, child)
                reference.append((loop.now + delay, next(counter), child))

    counter = iter(range(10**9))
    reference: list = []
    for tag in range(300):
        when = rng.randrange(0, 200)
        loop.at(when, event, tag)
        reference.append((when, next(counter), tag))
    while loop.step():
        pass
    # replay the same schedule through a heap of (time, sequence): the same order
    assert len(ran) == len(reference) and len(loop) == 0
    order = [tag for _, _, tag in heapq.nsmallest(len(reference), reference)]
    assert [tag for _, tag in ran] == order
    assert [t for t, _ in ran] == sorted(t for t, _ in ran)


def test_an_event_in_the_past_runs_now_and_later_needs_a_positive_delay():
    loop, ran = Loop(), []
    loop.at(10, lambda: loop.at(3, ran.append, "past"))
    loop.at(10, ran.append, "tie")
    loop.at(11, ran.append, "next")
    loop.later(12, ran.append, ("later",))
    while loop.step():
        pass
    assert ran == ["tie", "past", "next", "later"] and loop.now == 12 and loop.steps == 5
