"""Set reconciliation beside HMP's full-index exchange, on the same stores in the same run.

    python bench/sync.py [--items 100000]

Two stores of N containers that differ by 0.1% and by 1% (differences on
both sides). For meshnode's sync session (the real state machine, every message through
its CBOR bytes): bytes on the wire
(deterministic CBOR, both directions), round trips and wall time. For HMP's
MCE `container_index`: the bytes of one side's full index (every container
DID with its head hashes), which is what that exchange sends before any
container moves. Goal: at 0.1%, at most 5% of the full index's bytes, and
round trips growing like log(n). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import time

from meshnode.container import cbor
from meshnode.sync.selective import EVERYTHING
from meshnode.sync.session import INITIATOR, RESPONDER, Entry, Session


def make_items(n: int, seed: int) -> list[Entry]:
    rng = random.Random(seed)
    return [Entry(1_800_000_000_000 + rng.randrange(10**9), hashlib.sha256(f"{seed}-{i}".encode()).digest(),
                  "diary_entry", frozenset()) for i in range(n)]


def reconcile(a_items, b_items) -> tuple[int, int, float]:
    """One session of the real state machine (``sync.session``), every message through its
    CBOR bytes; returns (bytes on the wire both ways, messages, seconds)."""
    t = time.perf_counter()
    a, b = Session(INITIATOR, a_items, EVERYTHING), Session(RESPONDER, b_items, EVERYTHING)
    queue = [(b, m) for m in a.start()]
    wire = messages = 0
    while queue:
        receiver, message = queue.pop(0)
        data = cbor.encode(message)
        wire += len(data) + 3  # plus the varint frame header
        messages += 1
        other = a if receiver is b else b
        queue += [(other, m) for m in receiver.receive(cbor.decode(data, max_bytes=1 << 26, max_depth=8)[0])]
    assert a.done and b.done and (a.push | a.fetch | b.push | b.fetch)  # something was found
    return wire, messages, time.perf_counter() - t


def full_index_bytes(items) -> int:
    """HMP MCE container_index: DID -> {head: {class, sender_did, public_key, sig_algo, signature, payload_hash}}."""
    index = {}
    sender = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"
    for e in items:
        digest = e.ident
        did = "did:hmp:container:u" + base64.urlsafe_b64encode(b"\x12\x20" + digest).rstrip(b"=").decode()
        index[did] = {"head": {"class": "note", "sender_did": sender, "public_key": bytes(32),
                               "sig_algo": "ed25519", "signature": bytes(64),
                               "payload_hash": "sha256:" + digest.hex()}}
    return len(cbor.encode(index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    n = args.items
    base = make_items(n, 1)
    index_bytes = full_index_bytes(base)
    results = []
    print(f"{'difference':>10} {'ours bytes':>11} {'rounds':>6} {'time s':>7} {'full index bytes':>17} {'ratio':>7}")
    for fraction in (0.001, 0.01):
        d = max(1, int(n * fraction))
        extra_a, extra_b = make_items(d, 2), make_items(d, 3)
        a_items = base[: n - d] + extra_a          # a lacks d of the base and has d of its own
        b_items = base[d:] + extra_b               # b lacks another d and has d of its own
        wire, rounds, seconds = reconcile(a_items, b_items)
        ratio = wire / index_bytes
        results.append({"difference": fraction, "items": n, "ours_bytes": wire, "round_trips": (rounds + 1) // 2,
                        "messages": rounds, "seconds": round(seconds, 2), "full_index_bytes": index_bytes,
                        "ratio": round(ratio, 4)})
        print(f"{fraction:>10.1%} {wire:>11} {rounds:>6} {seconds:>7.2f} {index_bytes:>17} {ratio:>7.2%}")
    scaling = []
    for size in (1_000, 10_000, n):
        items = make_items(size, 4)
        d = max(1, size // 1000)
        _, rounds, _ = reconcile(items[d:] + make_items(d, 5), items[: size - d] + make_items(d, 6))
        scaling.append({"items": size, "messages": rounds})
    print("messages by set size (0.1% difference):", ", ".join(f"{s['items']}: {s['messages']}" for s in scaling))
    print(json.dumps({"bench": "sync", "goal_ratio_at_0.1%": 0.05, "results": results, "scaling": scaling}))


if __name__ == "__main__":
    main()
