"""Format 2 of sync reconciliation (meshnode.domain.sync.rbsr): both sides end with exactly the union, small
differences cost little, collisions of short fingerprints are caught, and peer input is checked."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.container import cbor
from meshnode.domain.sync.hash_index import MOD
from meshnode.domain.sync.rbsr import Rbsr
from meshnode.domain.sync.reconcile import ReconcileError
from meshnode.domain.sync.selective import EVERYTHING, PUBLIC_GOAL, Want
from meshnode.domain.sync.session import INITIATOR, RESPONDER, Entry, Session


def ident(n: int) -> bytes:
    return hashlib.sha256(b"rbsr-%d" % n).digest()


class Colliding(Rbsr):
    """Every fingerprint of the first attempt is the same: every differing range looks equal."""

    def _fp(self, count: int, total: int) -> bytes:
        return bytes(self.fp_len) if self.attempt == 1 else super()._fp(count, total)


def run(a_ids, b_ids, fp_len=None, cls=Rbsr):
    """Drive two sides through CBOR; returns (a, b, messages both ways, bytes)."""
    a, b = cls(list(a_ids), True, fp_len=fp_len), cls(list(b_ids), False)
    message, sender, receiver = a.initiate(), a, b
    messages = wire = 0
    while True:
        data = cbor.encode(message)
        messages, wire = messages + 1, wire + len(data)
        message = receiver.receive(cbor.decode(data, max_bytes=1 << 24, max_depth=8)[0])
        if message is None:  # the receiver agreed: its null ends the pass
            sender.peer_ended()
            return a, b, messages + 1, wire + 1
        sender, receiver = receiver, sender
        assert messages < 600


def assert_exact(a, b, a_ids, b_ids):
    a_ids, b_ids = set(a_ids), set(b_ids)
    assert a.have | b.need == a_ids - b_ids  # what goes from a to b: exactly b's lack
    assert b.have | a.need == b_ids - a_ids
    assert not (a.have & b.have or a.need & b.need)


@settings(max_examples=400, deadline=None)
@given(st.sets(st.integers(0, 3000), max_size=300), st.sets(st.integers(0, 3000), max_size=300),
       st.sampled_from([None, 1, 2, 3]))
def test_both_sides_end_with_the_union_whatever_the_sets_and_fingerprint_length(xs, ys, fp_len):
    """Tiny sets, empty sides, all different, and 1-byte fingerprints that collide all the time."""
    a_ids, b_ids = [ident(x) for x in xs], [ident(y) for y in ys]
    a, b, _, _ = run(a_ids, b_ids, fp_len)
    assert_exact(a, b, a_ids, b_ids)


@pytest.mark.parametrize("a_n, b_n", [(0, 0), (0, 1), (1, 0), (0, 500), (500, 0), (1, 1), (2, 2)])
def test_empty_and_tiny_sides(a_n, b_n):
    a_ids, b_ids = [ident(i) for i in range(a_n)], [ident(10_000 + i) for i in range(b_n)]
    a, b, messages, _ = run(a_ids, b_ids)
    assert_exact(a, b, a_ids, b_ids)
    assert messages <= 4


def test_all_different():
    a_ids, b_ids = [ident(i) for i in range(3000)], [ident(i) for i in range(3000, 5000)]
    a, b, _, _ = run(a_ids, b_ids)
    assert_exact(a, b, a_ids, b_ids)
    assert a.restarts == b.restarts == 0


def test_collisions_forced_on_every_fingerprint_restart_the_pass_once_and_it_ends_exact():
    base = [ident(i) for i in range(2000)]
    a_ids, b_ids = base + [ident(5000 + i) for i in range(7)], base[5:] + [ident(6000)]
    a, b, _, _ = run(a_ids, b_ids, cls=Colliding)
    assert_exact(a, b, a_ids, b_ids)
    assert a.restarts == b.restarts == 1 and a.fp_len == b.fp_len == 16


def test_a_single_difference_is_named_by_the_sums_in_three_messages():
    base = [ident(i) for i in range(20_000)]
    for a_ids, b_ids in ((base + [ident(-1)], base), (base, base + [ident(-1)])):
        a, b, messages, wire = run(a_ids, b_ids)
        assert_exact(a, b, a_ids, b_ids)
        assert messages == 3 and wire < 1024, (messages, wire)


def test_a_peer_cannot_make_a_large_range_checked(monkeypatch):
    """The check is a pass over the range: above ROOT_CHECK_MAX ids this side computes it for no
    range, even when a peer sends one with every split; the pass still ends exact."""
    from meshnode.domain.sync import rbsr

    monkeypatch.setattr(rbsr, "ROOT_CHECK_MAX", 50)

    class Hostile(Rbsr):  # sends a check with every split, whatever its size
        def _describe(self, *args, **kwargs):
            monkeypatch.setattr(rbsr, "ROOT_CHECK_MAX", 1 << 40)
            try:
                return super()._describe(*args, **kwargs)
            finally:
                monkeypatch.setattr(rbsr, "ROOT_CHECK_MAX", 50)

    base = [ident(i) for i in range(400)]
    for a_ids, b_ids in ((base + [ident(-1)], base), (base, base + [ident(-1)])):
        a, b = Hostile(list(a_ids), True), Rbsr(list(b_ids), False)
        passes = []
        real = b.index.check
        b.index.check = lambda depth, prefix: passes.append(b.index.count_and_sum(depth, prefix)[0]) or real(depth, prefix)
        message, sender, receiver = a.initiate(), a, b
        for _ in range(100):
            message = receiver.receive(cbor.decode(cbor.encode(message), max_bytes=1 << 24, max_depth=8)[0])
            if message is None:
                sender.peer_ended()
                break
            sender, receiver = receiver, sender
        assert_exact(a, b, a_ids, b_ids)
        assert max(passes, default=0) <= 50, passes


def test_differences_that_add_up_to_an_id_are_not_taken_for_it():
    """a holds x1 and x2, b holds y, the counts differ by one: the sums point at x1 + x2 - y, which
    the check (sums of squares) refuses, so the range is split and the true three are found."""
    base = [ident(i) for i in range(100)]
    x1, x2 = ident(-1), ident(-2)
    y = int.from_bytes(ident(-3))
    z = (int.from_bytes(x1) + int.from_bytes(x2) - y) % MOD
    a_ids, b_ids = base + [x1, x2], base + [y.to_bytes(32)]
    a, b, _, _ = run(a_ids, b_ids)
    assert_exact(a, b, a_ids, b_ids)
    assert z.to_bytes(32) not in a.need | b.need


def test_traffic_follows_the_differences_not_the_set():
    for n in (2_000, 20_000):
        base = [ident(i) for i in range(n)]
        a_ids, b_ids = base[20:] + [ident(-i) for i in range(1, 21)], base[:-20] + [ident(-i) for i in range(21, 41)]
        a, b, _, wire = run(a_ids, b_ids)
        assert_exact(a, b, a_ids, b_ids)
        assert wire < 150 * 80, wire  # 80 differing items, format 1 spent 1.5 to 12 KB an item


# --- what a peer sends is checked ---------------------------------------------------

def opened(n=500):
    """A responder that has answered an opening (it split ranges), and the initiator."""
    a, b = Rbsr([ident(i) for i in range(n)], True), Rbsr([ident(i) for i in range(10, n + 10)], False)
    answer = b.receive(a.initiate())
    return a, b, answer


@pytest.mark.parametrize("bad", [
    None, [], {"r": []}, {"f": 4}, {"f": 0, "r": [0]}, {"f": 17, "r": [0]}, {"f": 4, "r": [0], "x": 1},
    {"f": 4, "r": []}, {"f": 4, "r": [0, 0]}, {"f": 4, "r": [b"short"]}, {"f": 4, "r": ["text"]},
    {"f": 4, "r": [[0, b""]]}, {"f": 4, "r": [[9, bytes(4 << 9), 1, bytes(32)]]},
    {"f": 4, "r": [[2, bytes(15), 1, bytes(32)]]}, {"f": 4, "r": [[2, bytes(16)]]},  # no count and sum
    {"f": 4, "r": [[2, bytes(16), -1, bytes(32)]]}, {"f": 4, "r": [[2, bytes(16), 1, bytes(31)]]},
    {"f": 4, "r": [[2, bytes(16), 1, bytes(32), bytes(15)]]},
    {"f": 4, "r": [ident(2) + ident(1)]},  # ids out of order
    {"f": 4, "r": [[2, bytes(16), 1, bytes(32)]], "e": [0, bytes(32)]},  # final and splitting
    {"f": 4, "r": [b""], "e": [0, bytes(31)]}, {"f": 4, "r": [b""]},  # ids at the root and no account
    {"f": 4, "a": 2, "r": [b""]},
])
def test_a_malformed_opening_is_refused_with_a_reason(bad):
    with pytest.raises(ReconcileError):
        Rbsr([ident(i) for i in range(50)], False).receive(bad)


def test_malformed_answers_are_refused():
    a, b, answer = opened()
    units = len(answer["r"])
    for bad in ({"r": answer["r"] + [0]}, {"r": [[]] * (units + 1)}, {"r": [[5, 0]] * units},
                {"r": [[0, b"", 0, b""]] * units}, {"r": [[300, b""]] * units}, {"r": [1.5] * units},
                {"r": answer["r"], "f": 4}, {"r": [0] * units}):  # all done, yet no account
        with pytest.raises(ReconcileError):
            opened()[0].receive(bad)


def test_ids_outside_their_range_are_refused():
    a, _, answer = opened()
    bits = a._sent[0][2]
    index = answer["r"][0][0]  # the first root child the responder opened
    outside = bytes([((index + 1) % (1 << bits)) << (8 - bits)]) + bytes(31)  # in the next child
    with pytest.raises(ReconcileError, match="lie in their range"):
        a.receive({"r": [[index, outside]] + answer["r"][1:], "e": [0, bytes(32)]})


def test_a_peer_whose_accounts_never_agree_is_refused_after_one_restart():
    b = Rbsr([ident(i) for i in range(3)], False)
    restart = b.receive({"f": 4, "r": [b""], "e": [5, bytes(32)]})  # "I hold nothing", yet 5 more
    assert restart["a"] == 2 and restart["f"] == 16 and b.restarts == 1
    assert len(b._sent) == 1  # its own root, split
    with pytest.raises(ReconcileError, match="after a restart"):
        b.receive({"r": [b""], "e": [5, bytes(32)]})


def test_nothing_after_the_end_and_no_early_null():
    a, b, _, _ = run([ident(1)], [ident(2)])
    with pytest.raises(ReconcileError):
        a.receive({"r": []})
    with pytest.raises(ReconcileError):
        Rbsr([ident(i) for i in range(50)], True).peer_ended()


def test_a_session_refuses_the_other_formats_messages():
    entries = [Entry(0, ident(i), "note", frozenset()) for i in range(40)]
    v1 = Session(INITIATOR, entries, EVERYTHING, version=1).start()[0]
    v2 = Session(INITIATOR, entries, EVERYTHING, version=2).start()[0]
    with pytest.raises(ReconcileError):
        Session(RESPONDER, entries, EVERYTHING, version=2).receive(v1)
    with pytest.raises(ReconcileError):
        Session(RESPONDER, entries, EVERYTHING, version=1).receive(v2)
    with pytest.raises(ValueError):
        Session(INITIATOR, entries, EVERYTHING, version=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["note", "diary_entry"]), st.integers(0, 10),
                          st.sets(st.sampled_from(["mesh", "art", PUBLIC_GOAL]), max_size=2)), max_size=30),
       st.sampled_from([EVERYTHING, Want(public_goals=True), Want(tags=frozenset({"mesh"})),
                        Want(classes=frozenset({"note"}), since_ms=5)]))
def test_the_ids_a_pass_reconciles_are_those_its_want_matches(rows, want):
    """Format 2 takes the ids straight from the catalog (Want.idents): the same as matches(), public
    goals kept from a want that did not ask for them."""
    entries = [Entry(ts, ident(i), cls, frozenset(tags)) for i, (cls, ts, tags) in enumerate(rows)]
    expected = [e.ident for e in entries if want.matches(e.cls, e.timestamp_ms, e.tags)]
    assert want.idents(entries) == expected == [e.ident for e in want.select(entries)]
