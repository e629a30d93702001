"""Memory and store growth of a node flooded with junk from throw-away keys.

    python bench/junk_memory.py [--authors 40] [--per-author 25] [--bytes 8000] [--after 20] [--smoke]

Starts one node (tests/meshharness.py), lets it settle, then runs
tests/junk_flood.py against it (push, then gossip) and samples the node's
resident memory throughout: before, peak, and ``--after`` seconds after the
flood ended. ``--smoke``: a flood of four small containers, no settle or after window, the
node's home made in this process. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from meshharness import Node  # noqa: E402

SMOKE = {"authors": 2, "per_author": 2, "bytes": 500, "after": 0.0, "settle": 0.0}  # --smoke


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory in MB; ``RssAnon`` leaves out pages of mapped files (code touched once stays)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--authors", type=int, default=40)
    parser.add_argument("--per-author", type=int, default=25)
    parser.add_argument("--bytes", type=int, default=8000)
    parser.add_argument("--after", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=10.0)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    with tempfile.TemporaryDirectory() as root:
        node = Node(Path(root), "victim")
        try:
            node.start()
            pid = node.proc.pid
            time.sleep(args.settle)  # a measurement interval: the node's own start-up allocations settle
            before, anon_before = rss_mb(pid), rss_mb(pid, "RssAnon")
            samples: list[float] = []
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    samples.append((rss_mb(pid), rss_mb(pid, "RssAnon")))
                    done.wait(0.2)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
            started = time.monotonic()
            flood = subprocess.run([sys.executable, str(Path(__file__).resolve().parent.parent / "tests" /
                                                        "junk_flood.py"), address, "--authors", str(args.authors),
                                    "--per-author", str(args.per_author), "--bytes", str(args.bytes), "--gossip"],
                                   env=node.env, capture_output=True, text=True, timeout=600)
            flood_s = time.monotonic() - started
            tally = json.loads(flood.stdout.strip().splitlines()[-1]) if flood.stdout.strip() else {"error": flood.stderr[-500:]}
            time.sleep(args.after)  # the interval being measured: memory this long after the flood
            after, anon_after = rss_mb(pid), rss_mb(pid, "RssAnon")
            done.set()
            sampler.join()
            wanted = ("containers_refused", "containers_evicted", "gossip_ignored", "memory_trims", "invalid_from_peer")
            counts: dict[str, int] = {}
            for m in node.call("metrics"):
                if m["name"] in wanted:
                    counts[m["name"]] = counts.get(m["name"], 0) + m["value"]
            node.stop()
            conn = sqlite3.connect(node.home / "data" / "meshnode.db")
            try:
                junk, size = conn.execute("SELECT count(*), COALESCE(sum(length(core) + COALESCE(length(side), 0)), 0)"
                                          " FROM containers WHERE sender_did != ?", (node.did,)).fetchone()
            finally:
                conn.close()
        finally:
            node.kill()
    samples = samples or [(before, anon_before)]
    print(json.dumps({"bench": "junk_memory", "rss_before_mb": round(before, 1), "rss_peak_mb": round(max(s[0] for s in samples), 1),
                      "rss_after_mb": round(after, 1), "anon_before_mb": round(anon_before, 1),
                      "anon_peak_mb": round(max(s[1] for s in samples), 1), "anon_after_mb": round(anon_after, 1),
                      "after_s": args.after, "flood_s": round(flood_s, 1),
                      "junk_stored": junk, "junk_stored_mb": round(size / 1e6, 2), "metrics": counts, "flood": tally}))


if __name__ == "__main__":
    main()
