"""Spawn: time from `meshnode spawn --kind K --start` to the child reachable from its running parent,
per kind, for a parent holding many containers; beside a plain `meshnode init` + `meshnode run`
(ready, then reached by the same parent) measured in the same run.

    python bench/spawn.py [--containers 100000] [--kinds newborn,trained,clone] [--smoke]

The parent's store: half diary entries (trained and clone children get them), 40 % public notes
(clone only), 10 % private notes (no child); signed like any container and inserted in batches of
one transaction each. ``--smoke``: 20 containers, a newborn child, the parent's home made in this
process. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

BATCH = 5000
SMOKE = {"containers": 20, "kinds": "newborn"}  # --smoke


def fill(home: Path, n: int) -> float:
    """``n`` containers of the parent's own in its store; seconds taken (signing and inserting)."""
    from meshnode.base.config import load_config
    from meshnode.store.home import open_identity
    from meshnode.domain.knowledge import make_diary_entry
    from meshnode.domain.notes import make_note
    from meshnode.store import Database

    config = load_config(home)
    key = open_identity(config)
    t0 = int(time.time() * 1000) - n - 60_000  # in the past: peers refuse containers from the future
    started = time.perf_counter()
    db = Database(config.db_path)
    try:
        for first in range(0, n, BATCH):
            batch = []
            for i in range(first, min(n, first + BATCH)):
                if i % 10 < 5:
                    batch.append(make_diary_entry(key, f"diary entry {i}", now_ms=t0 + i))
                else:
                    audience = "private" if i % 10 == 9 else "public"
                    batch.append(make_note(key, f"note {i}", now_ms=t0 + i, audience=audience))
            db.put_containers(batch, received_at_ms=t0 + n, batch=BATCH)
    finally:
        db.close()
    return time.perf_counter() - started


def spawn(parent, kind: str) -> dict:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "meshnode", "--home", str(parent.home), "spawn", "--kind", kind,
                             "--start", "--json"], env=parent.env, capture_output=True, text=True, timeout=900,
                            stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        return {"error": result.stderr.strip()[-500:], "seconds": round(seconds, 2)}
    r = json.loads(result.stdout)
    seed = r.get("seed") or {}
    copied = seed.get("copied", {}).get("containers", 0)  # the other counts are per class and table
    seeding = seed.get("seconds") or 0.0
    return {"seconds": round(seconds, 2), "reachable_after_start_seconds": r["reachable_seconds"],
            "copied": copied, "seed_seconds": seeding,
            "containers_per_second": round(copied / seeding) if copied and seeding else None, "home": r["home"]}


def plain(root: Path, parent) -> dict:
    """`meshnode init` + `meshnode run` until ready, then until the parent reaches it (its bootstrap
    names the parent, as a child's does)."""
    from meshharness import Node
    from spawnlab import wait_child_running

    started = time.perf_counter()
    node = Node(root, "plain")
    node.set_bootstrap(parent, address_filter="/ip4/127.0.0.1/")
    node.start(timeout=120)
    ready = time.perf_counter() - started
    try:
        wait_child_running(parent, node.did, timeout=120)
        return {"ready_seconds": round(ready, 2), "seconds": round(time.perf_counter() - started, 2)}
    finally:
        node.stop()


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--containers", type=int, default=100_000)
    parser.add_argument("--kinds", default="newborn,trained,clone")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    from meshharness import Node
    from spawnlab import stop_child

    root = Path(tempfile.mkdtemp(prefix="sb", dir="/tmp"))  # short: control socket paths
    parent = Node(root, "par")
    fill_seconds = fill(parent.home, args.containers)
    parent.start(timeout=120)
    results, homes = {}, []
    try:
        results["plain_init_run"] = plain(root, parent)
        for kind in args.kinds.split(","):
            results[kind] = r = spawn(parent, kind)
            if "home" in r:
                homes.append(Path(r.pop("home")))
    finally:
        for home in homes:
            stop_child(home)
        parent.stop()
        subprocess.run(["rm", "-rf", str(root)], check=False)
    print(f"parent: {args.containers} containers (filled in {fill_seconds:.1f} s)")
    print(f"{'case':>16} {'seconds':>8} {'after start':>11} {'copied':>8} {'per second':>10}")
    for case, r in results.items():
        after = r.get("reachable_after_start_seconds", r.get("ready_seconds", "-"))
        print(f"{case:>16} {r['seconds']:>8} {after!s:>11} {r.get('copied', '-')!s:>8}"
              f" {r.get('containers_per_second') or '-'!s:>10}"
              + (f"  error: {r['error']}" if "error" in r else ""))
    print(json.dumps({"bench": "spawn", "containers": args.containers, "fill_seconds": round(fill_seconds, 2),
                      "results": results}))


if __name__ == "__main__":
    main()
