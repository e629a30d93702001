"""The web notebook's cost: its answers beside the control socket's, and what it adds to a tick.

    python bench/web.py [--notes 100000] [--requests 1000] [--ticks 200] [--rounds 2] [--smoke]

1. A home with N notes signed by the node's key (bulk insert through put_container's path).
2. A running node (web on, cognition off): ``status`` and a page of 50 notes (the newest, and one
   ``before=`` page from the middle) through HTTP with Bearer auth and through the control socket,
   interleaved request by request; p50, p99 and max in ms.
3. Tick overhead: a scripted LLM answering at once, ``pause_seconds = 0.05`` (the least allowed);
   T ticks with the web off, with it on and no event stream, with one stream and with four, each
   ``--rounds`` times in turn;
   mean, p50 and p99 of the tick's duration (``tick_traces``), the mean of ``cycle_tick_seconds``
   and ticks per second. Acceptable: web-on within 10% of off (protocols/web.md 11).
   ``--requests 0`` skips 1 and 2; ``--ticks 0`` skips 3.
``--smoke``: 20 notes, 2 requests of each kind, 3 ticks with the web off and 3 with it on and
one event stream, the homes made in this process: the bench end to end in seconds.

Prints a table and writes bench/results/web.json; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llmharness import ScriptedLLM  # noqa: E402
from meshharness import Node  # noqa: E402

from meshnode.base.config import load_config  # noqa: E402
from meshnode.store.home import open_identity  # noqa: E402
from meshnode.domain.notes import make_note  # noqa: E402
from meshnode.store import Database  # noqa: E402

T0 = 1_800_000_000_000
RESULTS = Path(__file__).resolve().parent / "results" / "web.json"


def fill(home: Path, notes: int) -> str:
    """N notes signed by the node's key; returns the container DID of the middle one (a before= page)."""
    config = load_config(home)
    key = open_identity(config)
    db = Database(config.db_path)
    try:
        for start in range(0, notes, 5000):
            with db.transaction() as conn:
                for i in range(start, min(notes, start + 5000)):
                    db.put_container_in(conn, make_note(key, f"note {i} about #topic{i % 13}", now_ms=T0 + i * 10),
                                        received_at_ms=T0, local={"tags": []})
        row = db.conn.execute("SELECT container_did FROM notes ORDER BY timestamp DESC, id DESC LIMIT 1 OFFSET ?",
                              (notes // 2,)).fetchone()
        return row[0]
    finally:
        db.close()


def stats(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3),
            "max_ms": round(ordered[-1], 3), "n": len(ordered)}


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def requests(node: Node, middle: str, n: int) -> dict:
    """Each request kind through HTTP and the control socket, interleaved."""
    token = (node.home / "web.token").read_text().strip()
    kinds = {
        "status": (("/api/status", {}), ("status", {})),
        "notes_newest": (("/api/notes", {"limit": 50}), ("notes", {"limit": 50})),
        "notes_middle": (("/api/notes", {"limit": 50, "before": middle}), ("notes", {"limit": 50, "before": middle})),
    }
    out = {}
    with httpx.Client(base_url=node.web_url.rstrip("/"), headers={"Authorization": f"Bearer {token}"},
                      timeout=30) as client:
        for name, ((path, params), (cmd, args)) in kinds.items():
            web, sock = [], []

            def http_get():
                r = client.get(path, params=params)
                assert r.status_code == 200 and r.json()["ok"], r.text[:300]

            for _ in range(n):
                web.append(timed(http_get))
                sock.append(timed(lambda: node.call(cmd, args)))
            out[name] = {"http": stats(web), "control": stats(sock)}
    return out


async def _drain(url: str, token: str, opened: trio.Event | None) -> None:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=None) as c:
        async with c.stream("GET", "/api/events") as r:
            assert r.status_code == 200, r.status_code
            if opened is not None:
                opened.set()
            async for _ in r.aiter_lines():
                pass


def _ticks(node: Node) -> int:
    return int(node.call("status")["cognition"].get("ticks") or 0)


async def _run_ticks(node: Node, ticks: int, clients: int) -> dict:
    async with trio.open_nursery() as nursery:
        if clients:
            token = (node.home / "web.token").read_text().strip()
            for _ in range(clients):
                opened = trio.Event()
                nursery.start_soon(_drain, node.web_url.rstrip("/"), token, opened)
                with trio.fail_after(30):
                    await opened.wait()
        start = await trio.to_thread.run_sync(_ticks, node)
        t = time.perf_counter()
        with trio.fail_after(max(120.0, ticks * 2.0)):
            while (now := await trio.to_thread.run_sync(_ticks, node)) < start + ticks:
                await trio.sleep(0.05)
        elapsed = time.perf_counter() - t
        nursery.cancel_scope.cancel()
    traces = node.call("mind_ticks", {"limit": min(500, ticks)})
    durations = [float(r["duration_ms"]) for r in traces if r.get("duration_ms") is not None]
    hist = [h for h in node.call("metrics", {"full": True})["histograms"] if h["name"] == "cycle_tick_seconds"]
    count = sum(h["count"] for h in hist)
    return {"ticks": now - start, "ticks_per_s": round((now - start) / elapsed, 2), "durations": durations,
            "cycle_tick_seconds_mean_ms": round(sum(h["sum"] for h in hist) / count * 1000, 3) if count else None}


CONFIGS = (("web_off", False, 0), ("web_on_0_streams", True, 0), ("web_on_1_stream", True, 1),
           ("web_on_4_streams", True, 4))


SMOKE_CONFIGS = (CONFIGS[0], CONFIGS[2])  # web off, and on with a stream: every path of a run


def tick_overhead(root: Path, ticks: int, rounds: int, smoke: bool = False) -> dict:
    """Each configuration ``rounds`` times, in turn (off, on, on, on, off, ...), so that the load of a
    shared machine falls on all of them; the ticks of a configuration's runs are pooled. ``smoke``:
    only SMOKE_CONFIGS, the homes made in this process."""
    configs = SMOKE_CONFIGS if smoke else CONFIGS
    answers = [f"Thought {i}: the {i % 7}th way to look at item {i}." for i in range(ticks * len(configs) * rounds + 50)]
    llm = ScriptedLLM(root, "llm", answers)   # distinct answers: no run is slowed by the anti-stagnation path
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in configs}
    try:
        for r in range(rounds):
            for label, web, clients in configs:
                node = Node(root, f"{label}_{r}", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.05",
                                                       "MESHNODE_WEB_ENABLED": "true" if web else "false"})
                node.cli("llm", "add", "main", "--url", llm.url, "--model", "scripted")
                node.start()
                try:
                    runs[label].append(trio.run(_run_ticks, node, ticks, clients))
                finally:
                    node.stop()
    finally:
        llm.stop()
    out = {}
    for label, got in runs.items():
        durations = [d for run in got for d in run["durations"]]
        out[label] = {"ticks": sum(run["ticks"] for run in got),
                      "ticks_per_s": round(statistics.mean(run["ticks_per_s"] for run in got), 2),
                      "tick_mean_ms": round(statistics.mean(durations), 3) if durations else None,
                      "tick_p50_ms": round(statistics.median(durations), 3) if durations else None,
                      "tick_p99_ms": stats(durations)["p99_ms"] if durations else None,
                      "cycle_tick_seconds_mean_ms": round(statistics.mean(
                          run["cycle_tick_seconds_mean_ms"] for run in got if run["cycle_tick_seconds_mean_ms"]), 3)}
    off = out["web_off"]["tick_mean_ms"]
    for label in out:
        on = out[label]["tick_mean_ms"]
        out[label]["vs_off"] = round(on / off, 3) if on and off else None
    return out


SMOKE = {"notes": 20, "requests": 2, "ticks": 3, "rounds": 1}  # --smoke


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each tick configuration, in turn")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    answers, loaded = {}, None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.notes and args.requests:
            node = Node(root, "bench", env={"MESHNODE_COGNITION_ENABLED": "false"})
            t = time.perf_counter()
            middle = fill(node.home, args.notes)
            loaded = round(time.perf_counter() - t, 2)
            print(f"store: {args.notes} notes signed and stored in {loaded:.1f} s")
            node.start()
            try:
                answers = requests(node, middle, args.requests)
            finally:
                node.stop()
            print(f"{'request':<14} {'via':<8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
            for name, by in answers.items():
                for via, s in by.items():
                    print(f"{name:<14} {via:<8} {s['p50_ms']:>8.2f} {s['p99_ms']:>8.2f} {s['max_ms']:>8.2f}")
        ticks = tick_overhead(root, args.ticks, args.rounds, args.smoke) if args.ticks else {}
    print(f"{'ticks':<18} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8} {'ticks/s':>8} {'vs off':>7}")
    for label, s in ticks.items():
        print(f"{label:<18} {s['tick_mean_ms'] or 0:>8.2f} {s['tick_p50_ms'] or 0:>8.2f} {s['tick_p99_ms'] or 0:>8.2f}"
              f" {s['ticks_per_s']:>8.2f} {s['vs_off'] or 0:>7.3f}")
    result = {"bench": "web", "notes": args.notes, "requests": args.requests, "load_s": loaded,
              "answers": answers, "ticks": ticks, "acceptable_vs_off": 1.10}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
