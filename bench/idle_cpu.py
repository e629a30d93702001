"""Idle CPU of every node of a loopback mesh of N real processes, with production timers (issue 18).

    python bench/idle_cpu.py [--nodes 13] [--settle 30] [--window 30] [--flame out.svg] [--ab]
                             [--before-tree PATH] [--smoke]

Every node bootstraps from the first, waits until all are connected to all (N - 1 peers each),
lets the mesh settle, then measures each process's CPU seconds over the window (cognition and
the web interface off; FAST_NET cleared). ``--flame`` records a py-spy flame graph of the middle
node during the window. ``--ab`` runs the same mesh twice, first with meshnode's idle-cost fixes
switched off (``MESHNODE_IDLE_FIXES=0`` in the nodes' environment), and reports both and the
ratio, so that before and after are measured on the same machine load. ``--before-tree PATH``
first runs the mesh with the meshnode of another source tree (say, main's checkout) and then with
this one, and reports both. The nodes run the code of this script's tree (or PATH): their
PYTHONPATH names it and they start in an empty directory (``python -m`` puts the working
directory first on the path). Runs of 8 nodes or more go under ``flock
/tmp/meshnode-bigmesh.lock``. ``--smoke``: two nodes (homes made in this process), no settle
window, a window of 0.2 s: the bench end to end in seconds. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parent.parent  # the meshnode source tree the nodes run by default
sys.path.insert(0, str(TREE / "tests"))

PY_SPY = "/work/main/.venv/bin/py-spy"
QUIET_ENV = {"MESHNODE_COGNITION_ENABLED": "false", "MESHNODE_WEB_ENABLED": "false"}


def measure_idle(nodes: int, settle_s: float, window_s: float, flame: str | None = None,
                 env: dict[str, str] | None = None, tree: str | Path | None = None, smoke: bool = False) -> dict:
    """Idle CPU (% of one core) per node of a fresh mesh of ``nodes`` processes running the
    meshnode of ``tree`` (this script's tree by default). ``smoke``: the homes are made in this
    process (with this process's meshnode, which is this tree's unless PYTHONPATH says otherwise)."""
    import meshharness
    from meshharness import Node, cpu_seconds, wait_until

    saved = dict(meshharness.FAST_NET)
    meshharness.FAST_NET.clear()  # production timers
    root = Path(tempfile.mkdtemp(prefix="idle", dir="/tmp"))
    cwd = os.getcwd()
    os.chdir(root)  # the nodes start here: no meshnode tree in their working directory
    started: list = []
    try:
        code = {"PYTHONPATH": str(Path(tree or TREE).resolve())}
        members = [Node(root, f"n{i}", env={**QUIET_ENV, **code, **(env or {})}) for i in range(nodes)]
        members[0].start()
        started.append(members[0])
        for node in members[1:]:
            node.set_bootstrap(members[0])
            node.start()
            started.append(node)

        def peers() -> list[int]:
            return [len(x.call("status").get("connected", [])) for x in members]

        formed = time.monotonic()
        try:
            wait_until(lambda: min(peers()) >= nodes - 1, 120, "full mesh")
        except AssertionError:
            pass  # measured anyway; peers_per_node_mean says how full it was
        formed = time.monotonic() - formed
        time.sleep(settle_s)
        counts = peers()
        target = members[nodes // 2]
        before = [cpu_seconds(x.proc.pid) for x in members]
        t0 = time.monotonic()
        if flame:
            subprocess.run([PY_SPY, "record", "-p", str(target.proc.pid), "-d", str(int(window_s)), "-o", flame,
                            "-f", "speedscope" if flame.endswith(".json") else "flamegraph", "-r", "50",
                            "--nonblocking"], capture_output=True)
        else:
            time.sleep(window_s)
        elapsed = time.monotonic() - t0
        after = [cpu_seconds(x.proc.pid) for x in members]
    finally:
        for x in started:
            x.kill()
        meshharness.FAST_NET.update(saved)
        os.chdir(cwd)
        shutil.rmtree(root, ignore_errors=True)
    pcts = sorted(100 * (b - a) / elapsed for a, b in zip(before, after))
    return {"nodes": nodes, "peers_per_node_mean": round(statistics.mean(counts), 2),
            "cpu_percent_mean": round(statistics.mean(pcts), 2),
            "cpu_percent_p90": round(pcts[min(len(pcts) - 1, int(0.9 * len(pcts)))], 2),
            "cpu_percent_max": round(pcts[-1], 2), "formed_s": round(formed, 1), "window_s": round(elapsed, 1),
            "flame_node_cpu_percent": round(100 * (after[nodes // 2] - before[nodes // 2]) / elapsed, 2)}


SMOKE = {"nodes": 2, "settle": 0.0, "window": 0.2}  # --smoke


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=13)
    parser.add_argument("--settle", type=float, default=30.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--flame", default=None, help="py-spy flame graph of the middle node (.svg or .json)")
    parser.add_argument("--ab", action="store_true", help="also run the mesh with the idle fixes off, first")
    parser.add_argument("--before-tree", default=None, help="also run the mesh with this tree's meshnode, first")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args(argv)
    if args.smoke:
        vars(args).update(SMOKE)
    if args.before_tree:
        before = measure_idle(args.nodes, args.settle, args.window, tree=args.before_tree)
        print(json.dumps({"tree": str(Path(args.before_tree).resolve()), **before}), flush=True)
        after = measure_idle(args.nodes, args.settle, args.window, args.flame)
        print(json.dumps({"tree": str(TREE), **after}), flush=True)
        result = {**after, "before_cpu_percent_mean": before["cpu_percent_mean"],
                  "before_cpu_percent_p90": before["cpu_percent_p90"],
                  "before_cpu_percent_max": before["cpu_percent_max"],
                  "before_peers_per_node_mean": before["peers_per_node_mean"]}
    elif not args.ab:
        result = measure_idle(args.nodes, args.settle, args.window, args.flame, smoke=args.smoke)
    else:
        off = measure_idle(args.nodes, args.settle, args.window, env={"MESHNODE_IDLE_FIXES": "0"})
        print(json.dumps({"fixes": "off", **off}), flush=True)
        on = measure_idle(args.nodes, args.settle, args.window, args.flame)
        print(json.dumps({"fixes": "on", **on}), flush=True)
        result = {"nodes": args.nodes, "peers_per_node_mean": on["peers_per_node_mean"],
                  "cpu_percent_mean": on["cpu_percent_mean"], "cpu_percent_p90": on["cpu_percent_p90"],
                  "cpu_percent_max": on["cpu_percent_max"], "off_cpu_percent_mean": off["cpu_percent_mean"],
                  "ratio_on_to_off": round(on["cpu_percent_mean"] / off["cpu_percent_mean"], 3)
                  if off["cpu_percent_mean"] else None}
    result = {"bench": "idle_cpu", **result}
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
