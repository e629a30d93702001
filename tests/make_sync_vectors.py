"""Generate protocols/vectors/sync.json: sync sessions message by message.

Each vector gives both sides' catalogs (items with class and tags) and wants,
then every message of the session in order — who sent it and the hex of its
deterministic CBOR map — and what each side ends up pushing and fetching.
``--check`` exits 1 if the file is stale.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from meshnode.base.container import cbor
from meshnode.domain.sync.selective import Want
from meshnode.domain.sync.session import FORMATS, INITIATOR, RESPONDER, Entry, Session

OUT = Path(__file__).resolve().parent.parent / "protocols" / "vectors" / "sync.json"
CLASSES = ("note", "diary_entry", "semantic_node")


def item(n: int) -> Entry:
    return Entry(1_800_000_000_000 + (n * 7919) % 100_000, hashlib.sha256(b"sync-vector-%d" % n).digest(),
                 CLASSES[n % 3], frozenset(["mesh"] if n % 2 else []))


EVERY = None
CASES = [
    ("identical sets of 100: one fingerprint, done", range(100), range(100), EVERY, EVERY),
    ("small sets go straight to ids", range(5), range(3, 9), EVERY, EVERY),
    ("500 items, 3 differ on each side", range(500), [*range(3, 500), 1000, 1001, 1002], EVERY, EVERY),
    ("one side empty", range(40), [], EVERY, EVERY),
    ("equal wants (diary entries tagged mesh): one pass", range(60), range(10, 80),
     {"classes": ["diary_entry"], "tags": ["mesh"]}, {"classes": ["diary_entry"], "tags": ["mesh"]}),
    ("different wants: a second pass over the responder's want", range(60), range(10, 80),
     {"classes": ["note"]}, {"classes": ["diary_entry", "semantic_node"], "since": 1_800_000_050_000}),
    ("the responder wants nothing (peer below its min_trust)", range(30), range(20, 50),
     EVERY, {"classes": []}),
]
CASES_2 = [  # format 2: the sum that names a single difference, the root given as ids, a split past the root
    ("one item more on one side: named by the root's sum", range(300), range(301), EVERY, EVERY),
    ("one item each side: two sums one level down", [*range(300), 1000], [*range(300), 1001], EVERY, EVERY),
    ("a side of one item lists it at the root", [7], range(5, 12), EVERY, EVERY),
    ("600 items, 12 differ: splits sized by the share that differed", range(600), range(6, 606),
     EVERY, EVERY),
]


def session(a_items, b_items, a_want, b_want, version: int) -> dict:
    a = Session(INITIATOR, a_items, Want.from_wire(a_want), version=version)
    b = Session(RESPONDER, b_items, Want.from_wire(b_want), version=version)
    messages = []
    queue = [("a", m) for m in a.start()]
    while queue:
        sender, message = queue.pop(0)
        messages.append({"from": sender, "hex": cbor.encode(message).hex()})
        receiver, name = (b, "b") if sender == "a" else (a, "a")
        queue += [(name, m) for m in receiver.receive(message)]
    assert a.done and b.done
    return {"messages": messages, "passes": a.passes,
            "a_push": sorted(i.hex() for i in a.push), "a_fetch": sorted(i.hex() for i in a.fetch),
            "b_push": sorted(i.hex() for i in b.push), "b_fetch": sorted(i.hex() for i in b.fetch)}


def catalog_json(entries: list[Entry]) -> list:
    return [[e.timestamp_ms, e.ident.hex(), e.cls, sorted(e.tags)] for e in sorted(entries, key=lambda e: e.ident)]


def render() -> str:
    vectors = []
    for version in FORMATS:
        for description, xs, ys, a_want, b_want in CASES + (CASES_2 if version == 2 else []):
            a_items, b_items = [item(x) for x in xs], [item(y) for y in ys]
            vectors.append({"description": f"format {version}: {description}", "sync_format": version,
                            "a_want": a_want, "b_want": b_want,
                            "a_items": catalog_json(a_items), "b_items": catalog_json(b_items),
                            **session(a_items, b_items, a_want, b_want, version)})
    doc = {"format": "meshnode sync vectors", "spec": "protocols/cogsync.md",
           "format_1": {"split": 16, "list_threshold": 32}, "vectors": vectors}
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes)")
