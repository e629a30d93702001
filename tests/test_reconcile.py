"""Range-based set reconciliation: both sides end with the union, and only differences travel."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.container import cbor
from meshnode.domain.sync.reconcile import ReconcileError, Reconciler, decode, encode
from meshnode.domain.sync.selective import Want
from meshnode.domain.sync.session import INITIATOR, RESPONDER, Entry, Session


def item(n: int, ts_spread: int = 50) -> tuple[int, bytes]:
    ident = hashlib.sha256(n.to_bytes(8, "big")).digest()
    return (1_800_000_000_000 + (n * 7919) % ts_spread, ident)


def run(a_items, b_items, **kw):
    """Drive two reconcilers through encoded messages; returns (a, b, rounds, bytes on the wire)."""
    a, b = Reconciler(list(a_items), **kw), Reconciler(list(b_items), **kw)
    message, sender, receiver = a.initiate(), a, b
    wire = 0
    rounds = 0
    while message is not None:
        data = cbor.encode(encode(message))
        wire += len(data)
        message = receiver.receive(decode(cbor.decode(data, max_bytes=1 << 24, max_depth=8)[0]))
        sender, receiver = receiver, sender
        rounds += 1
        assert rounds < 64
    return a, b, rounds, wire


def settle(a, b, a_items, b_items):
    a_ids = {i for _, i in a_items}
    b_ids = {i for _, i in b_items}
    # each side sends what it has that the other lacks, and fetches what it needs
    a_final = a_ids | a.need | b.have
    b_final = b_ids | b.need | a.have
    return a_ids, b_ids, a_final, b_final


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 5000), max_size=400), st.sets(st.integers(0, 5000), max_size=400),
       st.integers(2, 16), st.integers(1, 40))
def test_both_sides_end_with_the_union_and_nothing_else_crosses(xs, ys, split, threshold):
    a_items, b_items = [item(x) for x in xs], [item(y) for y in ys]
    a, b, _, _ = run(a_items, b_items, split=split, list_threshold=threshold)
    a_ids, b_ids, a_final, b_final = settle(a, b, a_items, b_items)
    assert a_final == b_final == a_ids | b_ids
    # exactly the differences are transferred, and only items one side holds are named
    assert (a.have | b.need) <= a_ids - b_ids and (b.have | a.need) <= b_ids - a_ids
    assert a.have | b.need == a_ids - b_ids and b.have | a.need == b_ids - a_ids


def test_identical_sets_finish_in_one_round_with_one_fingerprint():
    items = [item(i) for i in range(10_000)]
    a, b, rounds, wire = run(items, items)
    assert rounds == 1 and wire < 100
    assert not (a.have or a.need or b.have or b.need)


@pytest.mark.parametrize("n", [1_000, 10_000, 50_000])
def test_traffic_grows_with_the_differences_not_the_set(n):
    base = [item(i, ts_spread=10**9) for i in range(n)]
    a_items = base + [item(n + i, 10**9) for i in range(5)]
    b_items = base[:-5] + [item(2 * n + i, 10**9) for i in range(5)]
    a, b, rounds, wire = run(a_items, b_items)
    _, _, a_final, b_final = settle(a, b, a_items, b_items)
    assert a_final == b_final
    full_index = n * 32  # what listing every id would cost
    assert wire < full_index / (5 if n < 5000 else 20), (wire, full_index)
    assert rounds <= 2 * (len(str(n)) + 2)


@pytest.mark.parametrize("bad", [
    [], [[1, b"x" * 32, 1, [b"short", 1]]], [[1, b"x" * 32, 0, None]],
    [[2, b"x" * 32, 0, None], [1, b"x" * 32, 0, None]], [[1, b"x", 0, None]], "not a list",
])
def test_malformed_messages_are_refused(bad):
    with pytest.raises(ReconcileError):
        decode(bad)


# --- protocols/vectors/sync.json --------------------------------------------------

SYNC_VECTORS = Path(__file__).resolve().parent.parent / "protocols" / "vectors" / "sync.json"


def test_sync_vector_file_is_current():
    result = subprocess.run([sys.executable, str(Path(__file__).with_name("make_sync_vectors.py")), "--check"])
    assert result.returncode == 0, "protocols/vectors/sync.json is stale: run tests/make_sync_vectors.py"


def _catalog(rows) -> list[Entry]:
    return [Entry(ts, bytes.fromhex(i), cls, frozenset(tags)) for ts, i, cls, tags in rows]


@pytest.mark.parametrize("v", json.loads(SYNC_VECTORS.read_text())["vectors"], ids=lambda v: v["description"])
def test_sync_vectors_message_by_message(v):
    version = v["sync_format"]
    sides = {"a": Session(INITIATOR, _catalog(v["a_items"]), Want.from_wire(v["a_want"]), version=version),
             "b": Session(RESPONDER, _catalog(v["b_items"]), Want.from_wire(v["b_want"]), version=version)}
    expected = list(v["messages"])
    outgoing = [("a", m) for m in sides["a"].start()]
    while outgoing:
        sender, message = outgoing.pop(0)
        assert {"from": sender, "hex": cbor.encode(message).hex()} == expected.pop(0)
        raw = cbor.decode(cbor.encode(message), max_bytes=1 << 24, max_depth=8)[0]
        receiver = "b" if sender == "a" else "a"
        outgoing += [(receiver, m) for m in sides[receiver].receive(raw)]
    assert expected == []
    assert sides["a"].passes == v["passes"]
    for name, s in sides.items():
        assert s.done
        assert sorted(i.hex() for i in s.push) == v[f"{name}_push"]
        assert sorted(i.hex() for i in s.fetch) == v[f"{name}_fetch"]
