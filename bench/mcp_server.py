"""What MCP adds to a call: a tool through ``meshnode mcp`` (stdio) and through ``/mcp`` (HTTP) beside
the same control command on the control socket, interleaved call by call in one run.

    python bench/mcp_server.py (not mcp.py: the script's directory would hide the SDK) [--notes 200] [--requests 300]
                               [--smoke]

1. A running node (web on, cognition off) holding N notes (written through the control socket).
2. ``status`` and ``notes`` (a page of 20) each way, R times, in turn; p50, p99 and max in ms, and
   the ratio of each MCP p50 to the socket's.
3. ``meshnode mcp``'s start: from the process start to an initialized session (what a client waits).

``--smoke``: 2 notes, one call of each: the bench end to end in seconds.
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
from webharness import web_node  # noqa: E402

CALLS = {"status": {}, "notes": {"limit": 20}}
SMOKE = {"notes": 2, "requests": 1}  # --smoke


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=200)
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    a = ap.parse_args()
    if a.smoke:
        vars(a).update(SMOKE)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    with web_node(tmp) as web:
        for i in range(a.notes):
            web.node.call("note_add", {"text": f"note {i} for the MCP bench " + "x" * 200})
        result = trio.run(measure, web, a.requests, tmp)
    print(f"{'call':<16}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'x socket':>10}")
    for name, f in result.items():
        if isinstance(f, dict):
            print(f"{name:<16}{f['p50']:>9}{f['p99']:>9}{f['max']:>9}{f.get('x_socket_p50', 1.0):>10}")
    print(f"meshnode mcp start to an initialized session: {result['stdio_start_s']} s")
    out = {"bench": "mcp_server", "notes": a.notes, "requests": a.requests, **result}
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "mcp_server.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
