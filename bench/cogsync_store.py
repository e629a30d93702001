"""What keeping CogSync views costs the store, beside plain notes in the same run.

    python bench/cogsync_store.py [--items 2000]

Inserts N containers into a fresh database each way (one transaction per
container, as the node stores them): notes (the baseline: one view row, no
lineage), diary entries that each start a lineage, and one diary lineage N
versions long (each version replacing the previous: the index and the view
must follow). A view that is rebuilt per insert shows up as a falling rate
for the long lineage. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from meshnode.base.identity.keys import NodeKey
from meshnode.domain.knowledge import make_diary_entry
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000


def timed_inserts(path: Path, containers) -> float:
    db = Database(path)
    try:
        start = time.perf_counter()
        for c in containers:
            db.put_container(c, received_at_ms=T0)
        return time.perf_counter() - start
    finally:
        db.close()


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    n = 50 if args.smoke else args.items
    key = NodeKey(bytes(range(32)))
    notes = [make_note(key, f"note {i}", now_ms=T0 + i) for i in range(n)]
    lineages = [make_diary_entry(key, f"entry {i}", now_ms=T0 + i) for i in range(n)]
    chain = [make_diary_entry(key, "version 0", now_ms=T0)]
    for i in range(1, n):
        chain.append(make_diary_entry(key, f"version {i}", now_ms=T0 + i, replaces=[chain[-1].did]))
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: timed_inserts(Path(tmp) / f"{name}.db", items)
                   for name, items in (("notes", notes), ("diary_lineages", lineages), ("diary_chain", chain))}
    base = results["notes"]
    print(f"{'kind':>15} {'items/s':>9} {'vs notes':>9}")
    out = {}
    for name, seconds in results.items():
        rate = n / seconds
        out[name] = {"items_per_second": round(rate), "seconds": round(seconds, 3), "ratio_to_notes": round(base / seconds, 3)}
        print(f"{name:>15} {rate:>9.0f} {base / seconds:>9.2f}")
    print(json.dumps({"bench": "cogsync_store", "items": n, "results": out}))


if __name__ == "__main__":
    main()
