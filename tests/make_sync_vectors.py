"""Generate protocols/vectors/sync.json: reconciliation sessions message by message.

Each vector gives both sides' items and every message of the session as the
hex of its deterministic CBOR ``{"ranges": ...}`` map, then what each side
ends up holding and needing. ``--check`` exits 1 if the file is stale.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from meshnode.container import cbor
from meshnode.sync.reconcile import Reconciler, encode

OUT = Path(__file__).resolve().parent.parent / "protocols" / "vectors" / "sync.json"


def item(n: int) -> tuple[int, bytes]:
    return (1_800_000_000_000 + (n * 7919) % 100_000, hashlib.sha256(b"sync-vector-%d" % n).digest())


CASES = [
    ("identical sets of 100: one fingerprint, done", range(100), range(100)),
    ("small sets go straight to ids", range(5), range(3, 9)),
    ("500 items, 3 differ on each side", range(500), [*range(3, 500), 1000, 1001, 1002]),
    ("one side empty", range(40), []),
]


def session(a_items, b_items) -> dict:
    a, b = Reconciler(list(a_items)), Reconciler(list(b_items))
    messages = []
    message, receiver, other = a.initiate(), b, a
    while message is not None:
        messages.append(cbor.encode({"ranges": encode(message)}).hex())
        message = receiver.receive(message)
        receiver, other = other, receiver
    messages.append(cbor.encode({"ranges": None}).hex())
    return {"messages": messages,
            "a_have": sorted(i.hex() for i in a.have), "a_need": sorted(i.hex() for i in a.need),
            "b_have": sorted(i.hex() for i in b.have), "b_need": sorted(i.hex() for i in b.need)}


def render() -> str:
    vectors = []
    for description, xs, ys in CASES:
        a_items, b_items = [item(x) for x in xs], [item(y) for y in ys]
        vectors.append({"description": description,
                        "a_items": [[ts, i.hex()] for ts, i in sorted(a_items)],
                        "b_items": [[ts, i.hex()] for ts, i in sorted(b_items)],
                        **session(a_items, b_items)})
    doc = {"format": "meshnode sync vectors", "spec": "protocols/sync.md", "split": 16, "list_threshold": 32,
           "vectors": vectors}
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes)")
