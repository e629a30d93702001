"""Tick overhead of the cognitive core without the LLM's own time.

    python bench/cognition.py [--diary 100000] [--notes 10000]

A store with N diary entries and M notes (signed containers, as the node
keeps them), plus recent responses, memory, goals and command results. Then:
building a tick's contexts (goal: under 20 ms), and everything after the
answer (extraction, novelty, storage, running two commands, logging),
beside the baseline of one plain SQLite insert of a process_log row in the
same store. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sqlite3
import tempfile
import time
from pathlib import Path

from meshnode.engines.cognition import contexts
from meshnode.engines.cognition.cycle import _think
from meshnode.engines.cognition.validation import Verdict
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.knowledge import make_diary_entry
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000


def fill(db: Database, key: NodeKey, diary: int, notes: int) -> None:
    """Bulk load through the same insert path as put_container, in large transactions."""
    def load(make, n):
        batch = 5000
        for start in range(0, n, batch):
            with db.transaction() as conn:
                for i in range(start, min(n, start + batch)):
                    db.put_container_in(conn, make(i), received_at_ms=T0, local={"tags": []})

    load(lambda i: make_diary_entry(key, f"entry {i} about topic {i % 97}", now_ms=T0 + i, topics=[f"t{i % 13}"]),
         diary)
    load(lambda i: make_note(key, f"note {i} #tag{i % 7}", now_ms=T0 + i, priority=i % 5), notes)
    with db.transaction() as conn:
        conn.executemany("INSERT INTO llm_recent_responses (role, content) VALUES ('assistant', ?)",
                         [(f"a previous thought number {i} " * 20,) for i in range(50)])
        conn.executemany("INSERT INTO llm_memory (content) VALUES (?)", [(f"memory {i}",) for i in range(500)])
        conn.executemany("INSERT INTO process_log (name, value) VALUES (?, ?)",
                         [(f"cmd:c{i}", json.dumps({"status": "ok"})) for i in range(1000)])


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


SMOKE = {"diary": 200, "notes": 20}  # --smoke


def main() -> None:
    from meshnode.records.gmp import store_hooks

    store_hooks.install()  # every Database here admits and draws GMP containers, as the node's does
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diary", type=int, default=100_000)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    key = NodeKey(bytes(range(32)))
    answer = ("Thinking about the next step with fresh eyes.\n# Commands:\n"
              '{"cmd_id": "a", "type": "llm_memory_add", "args": {"text": "remember"}}\n'
              '{"cmd_id": "b", "type": "note_list", "args": {"limit": 5}}\n# End of commands\nConfidence: 0.7\n')
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(Path(tmp) / "bench.db")
        try:
            t = time.perf_counter()
            fill(db, key, args.diary, args.notes)
            print(f"store: {args.diary} diary entries, {args.notes} notes, loaded in {time.perf_counter() - t:.1f} s")
            build = timed(lambda: contexts.build(db, now_ms=T0, tick=1, recent_k=5, mode="normal", llm_id="x"), 100)
            counter = iter(range(10**9))
            passed = Verdict(auto_pass=True, rating=None)  # no validator: the answer's commands run
            after = timed(lambda: _think(db, key, T0, next(counter), "x", answer + str(next(counter)), 0.9, passed),
                          100)
            raw = sqlite3.connect(Path(tmp) / "bench.db", isolation_level=None)
            raw.execute("PRAGMA synchronous=FULL")
            baseline = timed(lambda: raw.execute("INSERT INTO process_log (name, value) VALUES ('b', '{}')"), 100)
            raw.close()
        finally:
            db.close()
    p50 = statistics.median
    print(f"context build: p50 {p50(build):.2f} ms, max {max(build):.2f} ms (goal < 20 ms)")
    print(f"after the answer: p50 {p50(after):.2f} ms, max {max(after):.2f} ms;"
          f" one plain insert: p50 {p50(baseline):.3f} ms (ratio {p50(after) / p50(baseline):.0f}x)")
    print(json.dumps({"bench": "cognition", "diary": args.diary, "notes": args.notes,
                      "context_build_p50_ms": round(p50(build), 3), "context_build_max_ms": round(max(build), 3),
                      "goal_ms": 20, "after_answer_p50_ms": round(p50(after), 3),
                      "plain_insert_p50_ms": round(p50(baseline), 4)}))


if __name__ == "__main__":
    main()
