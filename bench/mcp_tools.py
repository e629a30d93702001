"""Tick length with a slow and with a crashing outside MCP tool, against ticks with none (issue 33).

    python bench/mcp_tools.py [--ticks 10] [--smoke]

A cognitive cycle thinking with a scripted LLM over loopback (tests/llmharness.py), its gate offering
the tools of a trusted stdio MCP server (tests/mcp_tool_server.py), its processes taking the calls
that run past their server's inline_seconds (0, the default: every call). N ticks in each run, each
timed around ``Cycle.tick``:

- none: the answers call no outside tool (the baseline, measured in the same run);
- slow: each answer calls a tool that answers only after 60 s (timeout_seconds 60; it is let go at
  the end), with the default inline_seconds = 0: the call goes on beside the ticks as a process;
- slow1: the same with inline_seconds = 1 (a server set to let fast answers come inline): the
  tick waits 1 s, then the call goes beside;
- crash: each answer calls a tool whose server exits in the middle of the call (reconnected with
  its backoff; while it is down, calls are refused at once);
- before: one tick whose slow call has no ``beside`` (as before issue 33), timeout_seconds 2: the
  tick waits out the whole timeout (a reference: 30 s by default).

``--smoke``: one tick a run, slow1 with inline_seconds 0.25 (every case end to end, no figure judged). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from cyclelab import answer_with  # noqa: E402
from llmharness import ScriptedLLM  # noqa: E402
from meshnode.base.config import mcp as settings  # noqa: E402
from meshnode.base.container import now_ms  # noqa: E402
from meshnode.base.identity.keys import NodeKey  # noqa: E402
from meshnode.engines.cognition.cycle import Cycle  # noqa: E402
from meshnode.engines.cognition.processes import Processes  # noqa: E402
from meshnode.engines.gate import runner  # noqa: E402
from meshnode.engines.gate.gate import Gate, GateSettings  # noqa: E402
from meshnode.engines.gate.jail import Jail  # noqa: E402
from meshnode.engines.gate.tools import risk_policy  # noqa: E402
from meshnode.engines.mcp_tools.calls import McpTools  # noqa: E402
from meshnode.engines.mcp_tools.clients import Clients  # noqa: E402
from meshnode.records.mind import registry  # noqa: E402
from meshnode.records.mind.registry import Endpoint  # noqa: E402
from meshnode.store import Store  # noqa: E402

SERVER = str(Path(__file__).resolve().parent.parent / "tests" / "mcp_tool_server.py")
SMOKE = {"ticks": 1, "inline": 0.25}  # --smoke: every case once (before keeps its 2 s: a shorter one cuts the session's start)


def gate_for(store, tmp: Path, mcp) -> Gate:
    (tmp / "ws").mkdir(exist_ok=True)
    (tmp / "scratch").mkdir(exist_ok=True)
    return Gate(store, GateSettings(jail=Jail([tmp / "ws"]), commands=runner.policy_from_config(["echo"], timeout_s=5.0),
                                    risk=risk_policy({}, [], []), scratch_dir=tmp / "scratch",
                                    max_calls_per_task=1000), now_ms, mcp=mcp)


async def run(tmp: Path, case: str, ticks: int, timeout_s: float = 60.0, beside: bool = True,
              inline_s: float = 0.0) -> dict:
    """``ticks`` ticks of a fresh cycle whose answers call ``case``'s tool: each tick's length in ms."""
    tmp.mkdir()
    tool = {"none": None, "slow": "slow", "slow1": "slow", "crash": "crash", "before": "slow"}[case]
    answers = [answer_with(i, *([{"cmd_id": f"c{i}", "type": f"mcp.tt.{tool}", "args": {"tag": str(i)} if
                                  tool == "slow" else {}}] if tool else [])) for i in range(ticks)]
    llm = ScriptedLLM(tmp, "main", answers)
    clients = Clients(settings.parse({"tt": {"command": sys.executable, "args": [SERVER], "trusted": True,
                                             "risk": "low", "timeout_seconds": timeout_s,
                                             "inline_seconds": min(inline_s, timeout_s)}}), tmp)
    store = await Store.open(tmp / "db.sqlite")
    try:
        await store.write(registry.add, Endpoint("main", llm.url, "scripted", timeout_s=30))
        gate = gate_for(store, tmp, lambda g: McpTools(clients, g))
        processes = Processes(store, gate, now_ms, 60.0)
        cycle = Cycle(store, NodeKey.generate(), now_ms, gate=gate, processes=processes if beside else None)
        lengths, pending = [], 0
        async with trio.open_nursery() as nursery:
            await nursery.start(clients.run)
            await nursery.start(processes.run)
            for _ in range(ticks):
                started = time.perf_counter()
                await cycle.tick()
                lengths.append((time.perf_counter() - started) * 1000)
            pending = len(processes.running())
            if tool == "slow" and clients.links["tt"].session is not None:
                await gate.mcp.call("mcp.tt.release", {})  # let the slow calls go: the bench ends
            nursery.cancel_scope.cancel()
        outcomes = await store.read(lambda db: [json.loads(v).get("code") or json.loads(v).get("result", {}).get(
            "status", "ok") for (v,) in db.conn.execute("SELECT value FROM process_log WHERE name LIKE 'cmd:%'")])
        return {"p50_ms": round(statistics.median(lengths), 1), "max_ms": round(max(lengths), 1), "ticks": ticks,
                "calls_pending_after": pending, "outcomes": sorted(set(outcomes))}
    finally:
        llm.stop()
        await store.aclose()


async def measure(ticks: int, tmp: Path, inline_s: float = 1.0, before_timeout_s: float = 2.0) -> dict:
    out = {}
    for case in ("none", "slow", "crash"):
        out[case] = await run(tmp / case, case, ticks)
    out["slow1"] = await run(tmp / "slow1", "slow1", ticks, inline_s=inline_s)
    out["before"] = await run(tmp / "before", "before", 1, timeout_s=before_timeout_s, beside=False)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=10)
    parser.add_argument("--inline", type=float, default=1.0, help="inline_seconds of the slow1 case")
    parser.add_argument("--before-timeout", type=float, default=2.0, help="timeout_seconds of the before case")
    parser.add_argument("--smoke", action="store_true",
                        help="one tick a run, slow1 inline 0.25 s (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-tools-") as tmp:
        out = trio.run(measure, args.ticks, Path(tmp), args.inline, args.before_timeout)
    base = out["none"]["p50_ms"]
    for case, f in out.items():
        print(f"{case:6} tick p50 {f['p50_ms']:8.1f} ms, max {f['max_ms']:8.1f} ms ({f['p50_ms'] / base:.2f}x none);"
              f" calls still pending after: {f['calls_pending_after']}; outcomes: {', '.join(f['outcomes']) or '-'}")
    print(json.dumps({"bench": "mcp_tools", "ticks": args.ticks, "inline_seconds": 0.0,
                      "slow1_inline_seconds": args.inline, "before_timeout_seconds": args.before_timeout, **out,
                      "slow_x_none_p50": round(out["slow"]["p50_ms"] / base, 2),
                      "slow1_x_none_p50": round(out["slow1"]["p50_ms"] / base, 2),
                      "crash_x_none_p50": round(out["crash"]["p50_ms"] / base, 2)}))


if __name__ == "__main__":
    main()
