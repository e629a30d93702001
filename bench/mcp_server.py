"""What MCP adds to a call: a tool through ``meshnode mcp`` (stdio) and through ``/mcp`` (HTTP) beside
the same control command on the control socket, interleaved call by call in one run; and a new client
of ``/mcp`` after many abandoned sessions beside one of the same node with none open.

    python bench/mcp_server.py (not mcp.py: the script's directory would hide the SDK) [--notes 200] [--requests 300]
                               [--abandoned 100] [--rounds 20] [--smoke]

1. A running node (web on, cognition off) holding N notes (written through the control socket).
2. ``status`` and ``notes`` (a page of 20) each way, R times, in turn; p50, p99 and max in ms, and
   the ratio of each MCP p50 to the socket's.
3. ``meshnode mcp``'s start: from the process start to an initialized session (what a client waits).
4. Abandoned sessions: a new client's time to its first tool result (connect, initialize, ``status``)
   R' times on the node with no session open (the baseline), then A clients each open a session and
   go without ending it (no DELETE; each its own User-Agent, so past ``[web] mcp_max_sessions`` the
   node's limit is what holds), then R' new clients again; p50 and max of each, their ratio, and the
   sessions evicted and refused (metrics). Before issue 33 the 65th session and every one after were
   refused (503) for 30 minutes.

``--smoke``: 2 notes, one call of each, 10 abandoned sessions on a node holding 4: the bench end to
end in seconds.
Prints a table and writes bench/results/mcp_server.json; the last line is one JSON object.
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

from mcpharness import http_session, stdio_session  # noqa: E402
from meshharness import metric  # noqa: E402
from webharness import web_node  # noqa: E402

CALLS = {"status": {}, "notes": {"limit": 20}}
SMOKE = {"notes": 2, "requests": 1, "abandoned": 10, "rounds": 1}  # --smoke
SMOKE_NODE = {"MESHNODE_WEB_MCP_MAX_SESSIONS": "4", "MESHNODE_WEB_MCP_CLIENT_SESSIONS": "2"}  # still past its limit


def figures(ms: list[float]) -> dict:
    ms = sorted(ms)
    return {"p50": round(statistics.median(ms), 2), "p99": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 2),
            "max": round(ms[-1], 2)}


async def measure(web, requests: int, tmp: Path) -> dict:
    times = {(way, cmd): [] for way in ("socket", "stdio", "http") for cmd in CALLS}
    started = time.perf_counter()
    async with stdio_session(web.node, tmp / "err.log") as stdio:
        start_s = time.perf_counter() - started
        async with http_session(web.url, web.token) as http:
            for _ in range(requests):
                for cmd, args in CALLS.items():
                    t = time.perf_counter()
                    await trio.to_thread.run_sync(web.node.call, cmd, args)
                    times[("socket", cmd)].append((time.perf_counter() - t) * 1000)
                    for way, session in (("stdio", stdio), ("http", http)):
                        t = time.perf_counter()
                        out = await session.call_tool(cmd, args)
                        times[(way, cmd)].append((time.perf_counter() - t) * 1000)
                        assert not out.is_error, out
    result = {f"{way}_{cmd}": figures(ms) for (way, cmd), ms in times.items()}
    for cmd in CALLS:
        base = result[f"socket_{cmd}"]["p50"]
        for way in ("stdio", "http"):
            result[f"{way}_{cmd}"]["x_socket_p50"] = round(result[f"{way}_{cmd}"]["p50"] / base, 2)
    result["stdio_start_s"] = round(start_s, 2)
    return result


async def first_result_ms(web, agent: str) -> float:
    """A new client: from its first request to its first tool result, in ms (its session then ends)."""
    started = time.perf_counter()
    async with http_session(web.url, web.token, agent=agent) as session:
        out = await session.call_tool("status", {})
        took = (time.perf_counter() - started) * 1000
        assert not out.is_error, out
    return took


async def abandoned(web, sessions: int, rounds: int) -> dict:
    await first_result_ms(web, "warm-up")  # the node loads the MCP SDK at the first request to /mcp
    fresh = [await first_result_ms(web, f"fresh-{i}") for i in range(rounds)]
    started = time.perf_counter()
    for i in range(sessions):
        async with http_session(web.url, web.token, agent=f"abandoned-{i}", end=False):
            pass  # gone without a DELETE
    abandon_s = time.perf_counter() - started
    after = [await first_result_ms(web, f"new-{i}") for i in range(rounds)]
    counts = {name: await trio.to_thread.run_sync(metric, web.node, f"mcp_sessions_{name}")
              for name in ("evicted", "refused")}
    fresh_f, after_f = figures(fresh), figures(after)
    return {"abandoned_sessions": sessions, "new_client_fresh": fresh_f, "new_client_after_abandoned": after_f,
            "x_fresh_p50": round(after_f["p50"] / fresh_f["p50"], 2), "abandon_s": round(abandon_s, 2),
            "sessions_evicted": counts["evicted"], "sessions_refused": counts["refused"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--abandoned", type=int, default=100, help="sessions opened and left without a DELETE")
    ap.add_argument("--rounds", type=int, default=20, help="new clients timed before and after them")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    a = ap.parse_args()
    if a.smoke:
        vars(a).update(SMOKE)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    with web_node(tmp, env=SMOKE_NODE if a.smoke else None) as web:
        for i in range(a.notes):
            web.node.call("note_add", {"text": f"note {i} for the MCP bench " + "x" * 200})
        result = trio.run(measure, web, a.requests, tmp)
        sessions = trio.run(abandoned, web, a.abandoned, a.rounds)
    print(f"{'call':<16}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'x socket':>10}")
    for name, f in result.items():
        if isinstance(f, dict):
            print(f"{name:<16}{f['p50']:>9}{f['p99']:>9}{f['max']:>9}{f.get('x_socket_p50', 1.0):>10}")
    print(f"meshnode mcp start to an initialized session: {result['stdio_start_s']} s")
    for name in ("new_client_fresh", "new_client_after_abandoned"):
        f = sessions[name]
        print(f"{name:<28}{f['p50']:>9}{f['p99']:>9}{f['max']:>9}  ms to the first tool result")
    print(f"after {sessions['abandoned_sessions']} abandoned sessions (opened in {sessions['abandon_s']} s):"
          f" x{sessions['x_fresh_p50']} the fresh p50, {sessions['sessions_evicted']} evicted,"
          f" {sessions['sessions_refused']} refused")
    out = {"bench": "mcp_server", "notes": a.notes, "requests": a.requests, **result, **sessions}
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "mcp_server.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
