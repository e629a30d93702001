"""The agent's budget of tool calls (issue 12, item 13): spent, it no longer locks the gate for
good. A person resets it (through the agent's real cycle, a scripted LLM over HTTP and the CLI);
a new task or goal and a quiet period start it again (the gate with a test clock)."""

from __future__ import annotations

import json
import random

import pytest
from gatelab import CLOCK, clock
from llmharness import command_block
from meshharness import wait_until
from test_gate_session import _rows, start_mind

from meshnode.engines.gate import GateError
from meshnode.records.gate import budget

WORDS = ("lantern ferry orchard cobalt meadow signal harbor thistle basalt ember willow canyon prism quartz"
         " juniper falcon glacier saffron tundra velvet walnut zephyr amber bramble cinder dune").split()


def _results(node) -> list[tuple[str, dict]]:
    """The agent's read_file results in the order they ran: (cmd_id, result)."""
    return [(name[4:], json.loads(value)) for name, value in _rows(
        node, "SELECT name, value FROM process_log WHERE name LIKE 'cmd:r%' ORDER BY id")]


def test_a_person_resets_the_spent_budget_and_the_agent_goes_on(tmp_path, llms):
    script = ["Three files to read. " + command_block(*[
        {"cmd_id": f"r0-{i}", "type": "read_file", "args": {"path": f"f{i}.txt"}} for i in range(3)])]
    for n in range(1, 400):  # a different answer every tick, each reading a file not read before
        text = " ".join(random.Random(n).sample(WORDS, 12))
        script.append(f"Step {n}: {text}. " + command_block(
            {"cmd_id": f"r{n}", "type": "read_file", "args": {"path": f"f{n + 2}.txt"}}))
    llm = llms("main", script)
    files = {f"f{i}.txt": f"file {i}\n" for i in range(402)}
    node = start_mind(tmp_path, llm, files, env={"MESHNODE_GATE_MAX_CALLS_PER_TASK": "3"})
    try:
        wait_until(lambda: any(r.get("code") == "iteration_limit" for _, r in _results(node)), 60,
                   "the agent to spend its budget")
        wait_until(lambda: any("gate reset-limit" in n["text"] for n in node.call("notes")), 30,
                   "the person to be told how to let it go on")
        refused = len(_results(node))
        # nothing the agent does by itself ends the wait (before the fix: nothing at all did)
        wait_until(lambda: len(_results(node)) >= refused + 3, 60, "more ticks")
        assert all(r.get("code") == "iteration_limit" for _, r in _results(node)[refused - 1:])

        assert node.call("status")["cognition"]["tool_calls"] == {"used": 3, "max": 3}
        assert "gate reset-limit" in node.cli("status")
        assert "starts again" in node.cli("gate", "reset-limit")
        done = wait_until(lambda: [r for _, r in _results(node)[refused:] if r["status"] == "ok"], 60,
                          "a tool call to run again after the reset")
        assert done[0]["result"]["text"].startswith("file ")
        # the new budget is three calls again, then the gate refuses once more
        wait_until(lambda: _results(node)[-1][1].get("code") == "iteration_limit"
                   and len([r for _, r in _results(node)[refused:] if r["status"] == "ok"]) == 3, 60,
                   "the fresh budget to be spent")
        assert any(json.loads(v).get("by") == "cli" for (v,) in _rows(
            node, "SELECT value FROM config WHERE key = 'gate.calls_reset'"))
    finally:
        node.kill()


async def test_a_new_task_or_goal_and_a_quiet_period_start_the_count_again(lab):
    gate = lab["make"](max_calls_per_task=2, calls_quiet_ms=60_000)
    store = lab["store"]
    calls = iter(range(1000, 100_000))

    async def read() -> dict:  # a different call each time, so the loop detector stays out of it
        return await gate.call("read_file", {"path": "notes.txt", "max_bytes": next(calls)})

    async def refused() -> None:
        with pytest.raises(GateError) as info:
            await read()
        assert info.value.code == "iteration_limit" and "a person resets it" in info.value.reason

    async def spend() -> None:
        await gate.refresh()
        await read()
        await read()
        await refused()

    async def add(sql: str) -> None:
        def write(db):
            with db.transaction() as conn:
                conn.execute(sql)
        await store.write(write)

    def told() -> int:
        return len([t for t in lab["told"] if "gate reset-limit" in t])

    await spend()
    await gate.refresh()
    await gate.refresh()
    assert told() == 1  # told once, not at every tick

    await add("INSERT INTO tasks (name) VALUES ('a new task')")
    await spend()  # a fresh budget for the new task
    await add("INSERT INTO tasks (name, tags) VALUES ('fact-check: x', '[\"fact-check\"]')")
    await gate.refresh()
    await refused()  # a task the cycle makes by itself gives no new budget
    await add("INSERT INTO goals (name) VALUES ('a new goal')")
    await spend()
    assert told() == 2  # once more for the new piece of work

    CLOCK["now"] += 59_000
    await refused()  # still trying: not quiet
    CLOCK["now"] += 60_000  # a minute without calls
    await read()
    await read()
    await refused()

    await store.write(budget.request_reset, clock(), "test")
    await refused()
    await gate.refresh()  # the person's reset reaches the gate at its next tick
    await read()
