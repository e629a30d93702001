"""Helpers for the tests that run a cognitive cycle in the test's own trio loop (test_cognition_wake,
test_tick_traces, test_cognition_pause): a Cycle thinking with scripted LLMs over loopback HTTP,
answers that never read as repetitions, and a polled wait with a timeout."""

from __future__ import annotations

import inspect
from contextlib import asynccontextmanager
from typing import Callable

import pytest
import trio

from llmharness import ScriptedLLM, command_block, distinct_answers
from meshnode.records.mind import registry
from meshnode.engines.cognition.cycle import Cycle
from meshnode.records.mind.registry import Endpoint
from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.store.service import Store


def answer_with(i: int, *commands: dict) -> str:
    """A distinct answer (never read as a repetition) carrying ``commands``."""
    return distinct_answers(i + 1, lambda n, text: [])[i].split("# Commands:")[0] + command_block(*commands)


@asynccontextmanager
async def running_cycle(tmp_path, answers: list | None, *, validators: dict[str, list] | None = None,
                        prepare: Callable | None = None, key: NodeKey | None = None, **cycle_kw):
    """A Cycle thinking with a scripted LLM (``answers``; None: no LLM, core outage), running in a
    nursery: yields ``(cycle, store, llm)``. ``validators``: scripted validator LLMs by name;
    ``prepare(db)``: a write before the cycle starts; ``key``: the node's (a new one if None);
    ``cycle_kw``: the Cycle's (``pause_s`` ...)."""
    llm = ScriptedLLM(tmp_path, "main", answers) if answers is not None else None
    judges = [ScriptedLLM(tmp_path, name, verdicts) for name, verdicts in (validators or {}).items()]
    store = await Store.open(tmp_path / "mind.db")
    try:
        if llm is not None:
            await store.write(registry.add, Endpoint("main", llm.url, "scripted", timeout_s=30))
        for judge in judges:
            await store.write(registry.add, Endpoint(judge.script.stem, judge.url, "scripted", validator=True))
        if prepare is not None:
            await store.write(prepare)
        cycle = Cycle(store, key or NodeKey.generate(), now_ms, **cycle_kw)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cycle.run)
            yield cycle, store, llm
            nursery.cancel_scope.cancel()
    finally:
        for scripted in [llm, *judges] if llm is not None else judges:
            scripted.stop()
        await store.aclose()


async def until(condition, timeout: float = 30.0, what: str = "a condition") -> None:
    """Wait for ``condition()`` (polled; it may be a coroutine), failing after ``timeout`` seconds."""
    with trio.move_on_after(timeout):
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return
            await trio.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")
