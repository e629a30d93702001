"""GMP: the views and `task due` over many tasks, and delegation between two node processes.

    python bench/gmp.py [--tasks 100000] [--delegations 20] [--pushes 20] [--smoke]

Store part: one goal and N tasks signed by one key go into a fresh database with
admission and view drawing: the first 2000 one durable transaction each, as the node
stores them (that rate is reported), the rest in batches of 1000 to save time; then
every view is rebuilt from the containers alone (``Database.rebuild_views``, each
container decoded and verified again), and `task due`
(service.task_due, the query the CLI and the node run) is timed. One task in a hundred
is held by its creator with a next check in the past (due), the rest hold theirs in the
future, so `task due` answers N/100 rows out of N (goal: under 50 ms with 100,000).

Mesh part: two real nodes (tests/meshharness.py). Each delegation is timed from the
nodes' own clocks (same host): offer signed at A -> offer stored at B, plus acceptance
signed at B -> the version assigning B stored at B (A's node makes it on the acceptance);
the wait of the driver between the offer's arrival and its accept call is left out. A
plain exchange push of a note, A -> B and its ack (control command ``send``, timed
around the call), is measured in the same run as the baseline. ``--smoke``: 30 tasks, one
delegation and one push, the two homes made in this process. The last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from meshnode.domain.gmp import build  # noqa: E402
from meshnode.records.gmp import service
from meshnode.base.identity.keys import NodeKey  # noqa: E402
from meshnode.domain.notes import make_note  # noqa: E402
from meshnode.store import Database  # noqa: E402

T0 = 1_800_000_000_000
HOUR = 3_600_000
SINGLE = 2000  # tasks stored one transaction each (the node's way); the rest in batches of BATCH
BATCH = 1000


def make_tasks(key: NodeKey, n: int) -> list:
    goal = build.goal(key, {"title": "bench goal", "status": "active"}, now_ms=T0)
    out = [goal]
    for i in range(n):
        due = i % 100 == 0
        payload = {"title": f"task {i}", "status": "pending", "assigned_to": [key.did],
                   "next_check_at": T0 + (-HOUR if due else 30 * 24 * HOUR) + i}
        out.append(build.task(key, payload, now_ms=T0 + 1 + i, goal=goal.did, tags=("bench",)))
    return out


def store_part(n: int) -> dict:
    key = NodeKey(bytes(range(32)))
    started = time.perf_counter()
    containers = make_tasks(key, n)
    built_s = time.perf_counter() - started
    single = containers[:SINGLE + 1]
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "gmp.db")
        try:
            started = time.perf_counter()
            for c in single:  # as the node stores them: one durable transaction each
                db.put_container(c, received_at_ms=T0)
            single_s = time.perf_counter() - started
            started = time.perf_counter()
            for i in range(len(single), len(containers), BATCH):  # the rest faster, in batches
                with db.transaction() as conn:
                    for c in containers[i:i + BATCH]:
                        db.put_container_in(conn, c, received_at_ms=T0)
            batched_s = time.perf_counter() - started
            held = db.conn.execute("SELECT count(*) FROM tasks WHERE lineage IS NOT NULL").fetchone()[0]
            started = time.perf_counter()
            db.rebuild_views()
            rebuild_s = time.perf_counter() - started
            now = T0 + n + 1000
            service.task_due(db, now)  # warm the page cache: the node's reader connection is warm
            runs = []
            for _ in range(5):
                started = time.perf_counter()
                due = service.task_due(db, now)
                runs.append((time.perf_counter() - started) * 1000)
        finally:
            db.close()
    rest = len(containers) - len(single)
    return {"tasks": n, "tasks_in_view": held, "build_seconds": round(built_s, 2),
            "insert_per_second": round(len(single) / single_s),
            "insert_batched_per_second": round(rest / batched_s) if rest else None,
            "rebuild_seconds": round(rebuild_s, 2), "task_due_ms": round(statistics.median(runs), 2),
            "task_due_ms_max": round(max(runs), 2), "task_due_rows": len(due)}


def mesh_part(delegations: int, pushes: int, smoke: bool = False) -> dict:
    """``smoke``: the homes are made in this process."""
    from meshharness import Node, wait_until

    env = {"MESHNODE_COGNITION_ENABLED": "false"}
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Node(Path(tmp), "alice", env=env), Node(Path(tmp), "bob", env=env)
        try:
            a.start()
            b.set_bootstrap(a)
            b.start()
            wait_until(lambda: b.did in {p["did"] for p in a.call("peers") if p["connected"]}, 30, "the nodes to meet")
            push_ms = []
            for i in range(pushes + 1):
                note = make_note(NodeKey.generate(), f"plain {i}", now_ms=int(time.time() * 1000), audience="public")
                started = time.perf_counter()
                a.call("send", {"did": b.did, "container": _b64(note.to_bytes())})
                if i:  # the first one opens the stream protocols: left out
                    push_ms.append((time.perf_counter() - started) * 1000)
            goal = a.call("goal_add", {"title": "bench", "participants": [b.did]})["lineage"]
            rtt, one_way = [], []
            for i in range(delegations):
                task = a.call("task_add", {"goal": goal, "title": f"job {i}"})["lineage"]
                offer = a.call("task_assign", {"task": task, "candidates": [b.did]})["offer"]
                wait_until(lambda: b.call("received", {"dids": [offer]}), 30, "the offer to reach bob", interval=0.01)
                accept = b.call("task_accept", {"task": task})["did"]
                version = wait_until(lambda: _assigned_version(b, task), 30, "bob to see himself assigned",
                                     interval=0.01)
                at_a = a.call("received", {"dids": [offer]})
                at_b = b.call("received", {"dids": [offer, accept, version]})
                offer_ms = at_b[offer]["received_at_ms"] - at_a[offer]["timestamp_ms"]
                back_ms = at_b[version]["received_at_ms"] - at_b[accept]["timestamp_ms"]
                one_way.append(offer_ms)
                rtt.append(offer_ms + back_ms)
            assert a.stop() == 0 and b.stop() == 0
        finally:
            a.kill()
            b.kill()
    return {"delegations": delegations, "delegation_rtt_ms_p50": _p(rtt, 50), "delegation_rtt_ms_max": _p(rtt, 100),
            "offer_one_way_ms_p50": _p(one_way, 50), "push_rtt_ms_p50": _p(push_ms, 50),
            "push_rtt_ms_max": _p(push_ms, 100), "pushes": pushes}


def _assigned_version(node, task: str) -> str | None:
    shown = node.call("task_show", {"task": task})
    return shown["container_did"] if node.did in shown["assigned_to"] else None


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _p(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(pct / 100 * (len(values) - 1))))], 2)


SMOKE = {"tasks": 30, "delegations": 1, "pushes": 1}  # --smoke


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--delegations", type=int, default=20)
    parser.add_argument("--pushes", type=int, default=20)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    store = store_part(args.tasks)
    print(f"{store['tasks']} tasks: stored at {store['insert_per_second']}/s (batched"
          f" {store['insert_batched_per_second']}/s), views rebuilt in"
          f" {store['rebuild_seconds']} s, task due {store['task_due_ms']} ms ({store['task_due_rows']} rows)")
    mesh = mesh_part(args.delegations, args.pushes, args.smoke)
    print(f"delegation round trip p50 {mesh['delegation_rtt_ms_p50']} ms (offer one way"
          f" {mesh['offer_one_way_ms_p50']} ms); plain push round trip p50 {mesh['push_rtt_ms_p50']} ms")
    print(json.dumps({"bench": "gmp", "store": store, "mesh": mesh}))


if __name__ == "__main__":
    main()
