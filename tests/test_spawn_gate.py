"""The agent's `spawn` tool: destructive, so it waits in gate_confirmations until a person decides;
a rejected request never reaches the spawner, an approved one reaches it once with the agent's
arguments, and arguments outside the schema are refused before anyone is asked."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import trio

from cyclelab import answer_with, until
from gatelab import clock
from llmharness import ScriptedLLM, command_block
from meshharness import Node, wait_until
from meshnode.engines.cognition import catalogue, gate_commands
from meshnode.records.mind import registry
from meshnode.engines.cognition.commands import Command, extract
from meshnode.engines.cognition.cycle import Cycle
from meshnode.records.mind.registry import Endpoint
from meshnode.base.container import now_ms
from meshnode.engines.gate import GateError
from meshnode.records.gate import confirm
from meshnode.engines.gate.tools import DESTRUCTIVE, TOOLS, risk_policy
from meshnode.base.identity.keys import NodeKey
from meshnode.engines.spawn import launch
from meshnode.engines.spawn.model import KINDS
from meshnode.base.errors import SpawnError
from spawnlab import children_cleanup, root  # noqa: F401 (fixtures)


class Spawner:
    """Stands in for the node's spawn action: records every call."""

    def __init__(self, error: Exception | None = None):
        self.calls: list[dict] = []
        self.error = error

    async def __call__(self, args: dict) -> dict:
        self.calls.append(args)
        if self.error is not None:
            raise self.error
        return {"did": "did:key:z6MkChild", "name": args.get("name") or "kid", "kind": args["kind"], "started": True}


async def pending(store) -> list[dict]:
    return await store.read(confirm.listing, clock())


def test_spawn_is_a_destructive_tool_with_kind_and_name_only():
    tool = TOOLS["spawn"]
    assert tool.risk == DESTRUCTIVE
    assert tool.parameters["required"] == ["kind"]
    assert tool.parameters["properties"]["kind"]["enum"] == list(KINDS)
    assert tool.parameters["properties"]["name"]["maxLength"] == 64
    # configuration may raise a risk, never lower one: no setting lets the agent spawn unasked
    assert risk_policy({"spawn": "safe_read"}, ["spawn safe_read .*"], []).risk_of("spawn", {"kind": "clone"}) \
        == DESTRUCTIVE
    offered = {t["function"]["name"]: t["function"] for t in catalogue.tool_definitions()}
    assert offered["spawn"]["parameters"] == tool.parameters and "[risk: destructive]" in offered["spawn"]["description"]
    assert "spawn" in gate_commands.ASYNC_TYPES


async def test_spawn_waits_for_a_person_and_runs_once_approved(lab):
    store, spawner = lab["store"], Spawner()
    gate = lab["make"](spawner=spawner)
    asked = await gate.call("spawn", {"kind": "trained", "name": "scout"})
    assert asked["status"] == "needs_confirmation" and spawner.calls == []
    [req] = await pending(store)
    assert (req["id"], req["tool"], req["args"], req["risk"]) == (asked["confirmation"], "spawn",
                                                                  {"kind": "trained", "name": "scout"}, DESTRUCTIVE)
    assert len(lab["told"]) == 1 and f"meshnode confirm approve {req['id']}" in lab["told"][0]
    assert await gate.call("spawn", {"kind": "trained", "name": "scout"}) == asked  # asked again: the same request
    assert await gate.run_approved() == [] and spawner.calls == []  # nothing runs before the answer
    await store.write(confirm.decide, req["id"], True, clock(), "test")
    [done] = await gate.run_approved()
    assert done["ok"] and done["result"]["did"] == "did:key:z6MkChild"
    assert spawner.calls == [{"kind": "trained", "name": "scout"}]
    assert await gate.run_approved() == [] and len(spawner.calls) == 1  # once only
    [row] = await store.read(confirm.listing, clock(), "done")
    assert row["result"]["name"] == "scout"


async def test_a_rejected_or_expired_spawn_never_reaches_the_spawner(lab):
    store, spawner = lab["store"], Spawner()
    gate = lab["make"](confirm_ttl_ms=1000, spawner=spawner)
    first = await gate.call("spawn", {"kind": "clone"})
    second = await gate.call("spawn", {"kind": "newborn", "name": "late"})
    await store.write(confirm.decide, first["confirmation"], False, clock(), "test")
    lab_clock_after_ttl = clock() + 2000
    assert [r["status"] for r in await store.read(confirm.listing, lab_clock_after_ttl, None)] == ["expired", "rejected"]
    assert await gate.run_approved() == [] and spawner.calls == []
    with pytest.raises(GateError):
        await store.write(confirm.decide, second["confirmation"], True, lab_clock_after_ttl, "test")
    assert await gate.run_approved() == [] and spawner.calls == []


@pytest.mark.parametrize("args, says, read_says", [
    ({"kind": "twin"}, "args.kind must be one of clone, trained, newborn", "spawn.args.kind must be one of"),
    ({"kind": "clone", "name": "x" * 65}, "args.name is longer than 64 characters", "spawn.args.name is longer"),
    ({"kind": "clone", "name": ""}, "args.name must not be empty", "spawn.args.name must not be empty"),
    ({"name": "kid"}, "args needs 'kind'", "spawn.args.kind is required"),
    ({"kind": "clone", "home": "/tmp/elsewhere"}, "args has an unknown field 'home'", "spawn takes no 'home'"),
    ({"kind": "clone", "autostart": "systemd-system"}, "args has an unknown field 'autostart'",
     "spawn takes no 'autostart'"),
    ({"kind": 1}, "args.kind must be a string", "spawn.args.kind must be a string"),
])
async def test_arguments_outside_the_schema_are_refused_before_a_person_is_asked(lab, args, says, read_says):
    spawner = Spawner()
    gate = lab["make"](spawner=spawner)
    with pytest.raises(GateError) as info:
        await gate.call("spawn", args)
    assert info.value.code == "bad_args" and says in info.value.reason
    assert await pending(lab["store"]) == [] and lab["told"] == [] and spawner.calls == []
    result = await gate_commands.run(gate, Command("s1", "spawn", args), reflect=None)
    assert result["status"] == "error" and result["code"] == "bad_args"
    # and in the agent's answer the command is refused when it is read, naming the field
    read = extract(command_block({"cmd_id": "s1", "type": "spawn", "args": args}))
    assert read.commands == [] and len(read.errors) == 1 and read.errors[0].cmd_id == "s1"
    assert read_says in read.errors[0].reason


async def test_an_approved_spawn_without_a_spawner_or_refused_by_the_spawn_fails_with_its_reason(lab):
    store = lab["store"]
    bare = lab["make"]()  # no node wired a spawner
    asked = await bare.call("spawn", {"kind": "clone"})
    await store.write(confirm.decide, asked["confirmation"], True, clock(), "test")
    [done] = await bare.run_approved()
    assert not done["ok"] and done["result"]["code"] == "no_spawner"
    refusing = lab["make"](spawner=Spawner(SpawnError("too_many_children",
                                                      "this node has 16 children ([spawn] max_children)")))
    asked = await refusing.call("spawn", {"kind": "newborn"})
    await store.write(confirm.decide, asked["confirmation"], True, clock(), "test")
    [done] = await refusing.run_approved()
    assert not done["ok"] and done["result"] == {"code": "too_many_children",
                                                 "error": "this node has 16 children ([spawn] max_children)"}
    assert refusing.spawner.calls == [{"kind": "newborn"}]


async def test_the_agents_spawn_command_waits_until_a_person_approves_then_runs_once(lab, tmp_path):
    """The whole path in a running cognitive cycle: the LLM's answer asks for a child; the
    request waits in gate_confirmations while the agent goes on ticking; a person approves; the
    next tick runs it, once."""
    store, spawner = lab["store"], Spawner()
    gate = lab["make"](spawner=spawner)
    ask = {"cmd_id": "s1", "type": "spawn", "args": {"kind": "trained", "name": "scout"}}
    llm = ScriptedLLM(tmp_path, "main", [answer_with(0, ask), answer_with(1), answer_with(2), answer_with(3)])
    try:
        await store.write(registry.add, Endpoint("main", llm.url, "scripted", timeout_s=30))
        cycle = Cycle(store, NodeKey.generate(), now_ms, pause_s=60.0, gate=gate)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cycle.run)
            await until(lambda: logged(store, "cmd:s1"), what="the spawn command's result")
            result = json.loads((await logged(store, "cmd:s1"))[0])
            assert result["status"] == "ok" and result["result"]["status"] == "needs_confirmation", result
            [req] = await pending(store)
            assert (req["tool"], req["args"]) == ("spawn", {"kind": "trained", "name": "scout"})
            await ticked(cycle, 3)  # the agent goes on: tick 2 ran (and its approved calls), still nothing spawned
            assert spawner.calls == [] and [r["id"] for r in await pending(store)] == [req["id"]]
            await store.write(confirm.decide, req["id"], True, clock(), "person")

            async def ran():  # a person's answer does not wake the agent: the test spares the 60 s pause
                cycle.wake.set()
                return await logged(store, f"confirm:{req['id']}")
            await until(ran, what="the approved spawn to run")
            value, status = await logged(store, f"confirm:{req['id']}")
            assert status == "ok" and json.loads(value)["result"]["did"] == "did:key:z6MkChild"
            assert spawner.calls == [{"kind": "trained", "name": "scout"}]
            now = cycle.ticks
            await ticked(cycle, now + 2)  # a whole tick and its approved calls since: not run again
            assert len(spawner.calls) == 1
            nursery.cancel_scope.cancel()
    finally:
        llm.stop()


async def ticked(cycle: Cycle, n: int) -> None:
    """Until tick ``n`` started (so tick n-1 and the approved calls after it ended), waking the
    cycle out of its long pause at every poll (a wake set twice before a tick counts once)."""
    def started() -> bool:
        cycle.wake.set()
        return cycle.ticks >= n
    await until(started, what=f"tick {n}")


async def logged(store, name: str) -> tuple[str, str] | None:
    return await store.read(lambda db: db.conn.execute(
        "SELECT value, status FROM process_log WHERE name = ? ORDER BY id DESC", (name,)).fetchone())


def test_in_a_running_node_the_agent_spawns_a_child_once_a_person_approves(root, children_cleanup, llms):
    """The node wires its spawn action (the agent's, once the person approved) to the gate: the agent
    asks, nothing happens until the person answers `meshnode confirm approve`, then the child is
    made, started and recorded."""
    ask = {"cmd_id": "s1", "type": "spawn", "args": {"kind": "newborn", "name": "scout"}}
    llm = llms("main", [answer_with(0, ask), *(answer_with(i) for i in range(1, 6))])
    parent = Node(root, "par", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"})
    parent.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
    parent.start()
    conn = sqlite3.connect(parent.home / "data" / "meshnode.db")
    try:
        def request():
            return conn.execute("SELECT id, tool, args, status, result FROM gate_confirmations"
                                " WHERE tool = 'spawn'").fetchone()
        wait_until(request, 60, "the agent's spawn request")
        req_id, _, args, status, _ = request()
        assert json.loads(args) == {"kind": "newborn", "name": "scout"} and status == "pending"
        wait_until(lambda: len(llm.seen()) >= 3, 60, "two more ticks")  # the agent goes on meanwhile
        assert parent.call("children") == [] and request()[3] == "pending"
        assert "spawn" in parent.cli("confirm", "list")
        parent.cli("confirm", "approve", str(req_id))
        def finished():  # claimed: 'failed' (interrupted) while it runs, so a crash never runs it twice
            status, result = request()[3:]
            return status == "done" or (status == "failed" and "interrupted while running" not in result)
        wait_until(finished, 120, "the approved spawn to run")
        _, _, _, status, result = request()
        result = json.loads(result)
        assert status == "done", result
        children_cleanup.append(Path(result["home"]))
        assert result["name"] == "scout" and result["kind"] == "newborn" and result["started"] is True
        [child] = parent.call("children")
        assert child["did"] == result["did"] and child["name"] == "scout"
        assert launch.running_pid(Path(result["home"])) is not None
        assert conn.execute("SELECT count(*) FROM gate_confirmations WHERE tool = 'spawn'").fetchone()[0] == 1
    finally:
        conn.close()
        parent.stop()
