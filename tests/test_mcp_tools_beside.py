"""Outsiders never stall a tick (issue 33): an outside tool's call not answered within its server's
``inline_seconds`` runs on beside the tick as a process, its result reaching the agent at a later
tick; a server that goes away mid-call (its process exits, its HTTP connection closes) is noticed at
once, its pending calls end with ``mcp_unavailable`` and its stderr's last line is in the status,
never the prompt. The slow tool is controllable (tests/mcp_tool_server.py: ``slow`` waits until
``release`` is called), so nothing here waits out a real timeout."""

from __future__ import annotations

import json

import pytest
import trio

from cyclelab import answer_with, until
from gatelab import clock
from llmharness import ScriptedLLM, prompt_section
from meshnode.base.config import mcp as settings
from meshnode.base.container import now_ms
from meshnode.base.errors import ConfigError
from meshnode.base.identity.keys import NodeKey
from meshnode.engines.cognition import mcp_commands
from meshnode.engines.cognition.commands import Command
from meshnode.engines.cognition.cycle import Cycle
from meshnode.engines.cognition.processes import Processes
from meshnode.records.mind import registry
from meshnode.records.mind.registry import Endpoint
from test_mcp_tools import connected, http_server, stdio

CRASHED = "fatal: the tool server crashed on purpose"  # the last line the crash tool writes to stderr


async def beside(lab, nursery, mcp) -> Processes:
    """The cycle's processes, running: ``call`` hands them the outside calls past their budget, as the cycle does."""
    processes = Processes(lab["store"], mcp.gate, clock, 60.0)
    await nursery.start(processes.run)
    return processes


async def call(processes: Processes, cmd_id: str, tool: str, args: dict | None = None) -> dict:
    return await mcp_commands.run(processes.gate, Command(cmd_id, "mcp_call", {"tool": tool, "args": args or {}}),
                                  processes.beside)


async def process_row(store, process_id: int) -> dict:
    row = await store.read(lambda db: db.conn.execute(
        "SELECT status, result FROM processes WHERE id = ?", (process_id,)).fetchone())
    return {"status": row[0], "result": json.loads(row[1]) if row[1] else None}


async def ended(store, process_id: int, within: float = 15.0) -> dict:
    async def done():
        row = await process_row(store, process_id)
        return row if row["status"] != "running" else None
    await until(done, timeout=within, what=f"process {process_id} to end")
    return await process_row(store, process_id)


async def test_a_call_past_its_budget_goes_on_beside_and_one_within_it_answers_inline(lab, tmp_path):
    """``add`` answers within the budget: its result, no process. ``slow`` does not: the caller gets
    a running process at once (the call still pending), whose result arrives once the tool answers;
    ``process_stop`` stops another such call."""
    async with trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, tt=stdio(risk="low", timeout_seconds=60, inline_seconds=0.5))
        processes = await beside(lab, nursery, mcp)
        quick = await call(processes, "q1", "mcp.tt.add", {"a": 2, "b": 40})
        assert quick["result"] == {"tool": "mcp.tt.add", "result": "42"} and processes.running() == []
        slow = await call(processes, "s1", "mcp.tt.slow")
        assert slow["status"] == "ok" and slow["result"]["status"] == "running", slow
        pid = slow["result"]["process"]
        assert processes.running() == [pid] and (await process_row(lab["store"], pid))["status"] == "running"
        stopped = (await call(processes, "s2", "mcp.tt.slow"))["result"]["process"]
        await processes.stop(stopped)
        assert (await ended(lab["store"], stopped))["status"] == "stopped"
        assert (await process_row(lab["store"], pid))["status"] == "running"  # the other one still waits
        assert (await call(processes, "r1", "mcp.tt.release"))["result"]["result"] == "released"
        done = await ended(lab["store"], pid)
        assert done == {"status": "exited", "result": {"process": pid, "status": "exited", "exit_code": None,
                                                       "tool": "mcp.tt.slow", "result": "slow done"}}
        nursery.cancel_scope.cancel()


async def test_a_slow_tool_leaves_the_ticks_going_and_its_result_reaches_a_later_tick(lab, tmp_path):
    """In a running cycle: the tick that called ``slow`` (60 s timeout) ends with the call pending as
    a process; later ticks run meanwhile and show it ``[running]``; once the tool answers, a later
    prompt has its result as ``process:ID [ok]``."""
    store = lab["store"]
    calls = [{"cmd_id": "c1", "type": "mcp.tt.slow", "args": {}}]
    llm = ScriptedLLM(tmp_path, "main", [answer_with(0, *calls)] + [answer_with(i) for i in range(1, 200)])
    try:
        await store.write(registry.add, Endpoint("main", llm.url, "scripted", timeout_s=30))
        async with trio.open_nursery() as nursery:
            mcp = await connected(lab, tmp_path, nursery, tt=stdio(risk="low", timeout_seconds=60))
            processes = Processes(store, mcp.gate, clock, 60.0)
            cycle = Cycle(store, NodeKey.generate(), now_ms, pause_s=0.05, gate=mcp.gate, processes=processes)
            nursery.start_soon(cycle.run)
            await until(lambda: logged(store, "cmd:c1"), what="the first tick's call")
            first = json.loads((await logged(store, "cmd:c1"))[0])
            assert first["result"]["status"] == "running", first
            pid = first["result"]["process"]

            def running_in_a_later_prompt():
                return [p for p in llm.prompts()[1:] if f"process:{pid} [running]" in p]
            await until(running_in_a_later_prompt, what="a later tick while the call is pending")
            assert processes.running() == [pid]  # ticks went on; the call still waits for the tool
            await mcp.call("mcp.tt.release", {})

            def answered():
                return [p for p in llm.prompts() if f"process:{pid} [ok]" in p]
            await until(answered, what="a prompt with the slow call's result")
            results = prompt_section(answered()[0], "(context 4)", required=True)
            assert "slow done" in results and f"process:{pid} [running]" not in results
            nursery.cancel_scope.cancel()
    finally:
        llm.stop()


async def logged(store, name: str) -> tuple[str, str] | None:
    return await store.read(lambda db: db.conn.execute(
        "SELECT value, status FROM process_log WHERE name = ? ORDER BY id DESC", (name,)).fetchone())


async def test_a_crashing_stdio_server_ends_its_pending_calls_at_once_as_unavailable(lab, tmp_path):
    """A call waits (``slow``, 60 s timeout) when the server's process exits (``crash``): the pending
    call ends with mcp_unavailable long before its timeout; the server is ``unavailable`` with its
    stderr's last line in the status, not in what the agent reads; it is reconnected."""
    async with trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, tt=stdio(risk="low", timeout_seconds=60, inline_seconds=0.2))
        processes = await beside(lab, nursery, mcp)
        pid = (await call(processes, "s1", "mcp.tt.slow"))["result"]["process"]
        crash = await call(processes, "x1", "mcp.tt.crash")
        assert (crash["status"], crash["code"]) == ("error", "mcp_unavailable"), crash
        [status] = mcp.clients.status()  # (it is retried after a backoff of 1 s)
        assert (status["status"], status["stderr"]) == ("unavailable", CRASHED), status
        assert status["error"] == "the server closed the connection" and status["tools"] == []
        done = await ended(lab["store"], pid, within=10)  # far below the call's 60 s
        assert done["status"] == "failed" and done["result"]["code"] == "mcp_unavailable", done
        for told in (crash["error"], done["result"]["error"], mcp.catalogue()):
            assert "crashed on purpose" not in told  # its stderr: the person's status, never the prompt
        await until(lambda: mcp.clients.links["tt"].status == "up", what="the server reconnected", timeout=60)
        nursery.cancel_scope.cancel()


async def test_an_http_server_gone_mid_call_ends_the_call_at_once_as_unavailable(lab, tmp_path):
    """The server process behind a url is killed while a call waits: the connection resets, the call
    ends with mcp_unavailable at once, the server is unavailable; a new call is refused at once."""
    async with http_server() as (url, server), trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, web={"url": url, "token": "s3", "risk": "low",
                                                           "timeout_seconds": 60, "inline_seconds": 0.2})
        processes = await beside(lab, nursery, mcp)
        pid = (await call(processes, "s1", "mcp.web.slow"))["result"]["process"]
        server.kill()
        done = await ended(lab["store"], pid, within=10)
        assert done["status"] == "failed" and done["result"]["code"] == "mcp_unavailable", done
        again = await call(processes, "a1", "mcp.web.add", {"a": 1, "b": 2})
        assert again["code"] == "mcp_unavailable", again
        assert mcp.clients.links["web"].status in ("unavailable", "connecting")
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("value, says", [(-1, "inline_seconds = -1"), (11, "from 0 to 10"),
                                         ("1", "inline_seconds must be a number"), (5, "not above timeout_seconds")])
def test_inline_seconds_is_checked(value, says):
    with pytest.raises(ConfigError, match=says):
        settings.parse({"t": {"command": "x", "inline_seconds": value, "timeout_seconds": 2}})
    assert settings.parse({"t": {"command": "x"}})[0].inline_s == 0.0  # by default a tick never waits
    assert settings.parse({"t": {"command": "x", "inline_seconds": 0.5, "timeout_seconds": 2}})[0].inline_s == 0.5


def test_a_person_reads_an_unavailable_servers_last_stderr_line():
    from meshnode.faces.cli.mind import mcp_server_line

    down = {"server": "tt", "status": "unavailable", "error": "the server's process exited (code 3)",
            "stderr": CRASHED, "tools": [], "sandboxed": True}
    assert mcp_server_line(down) == f"tt unavailable (the server's process exited (code 3), sandboxed); its stderr: {CRASHED}"
    up = {"server": "tt", "status": "up", "error": None, "stderr": None, "tools": ["a", "b"], "sandboxed": False}
    assert mcp_server_line(up) == "tt up (2 tools)"
