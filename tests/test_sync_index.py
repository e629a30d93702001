"""The index of format 2 sync (meshnode.domain.sync.hash_index) answers every range like a plain sorted
list would, an updated index equals one built from scratch, and the index a node keeps between
sessions (meshnode.domain.sync.index_cache) is always that of the catalog handed in: it cannot go stale
when containers are admitted, removed or no longer shared, or when the catalog is another peer's."""

from __future__ import annotations

import bisect
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.domain.sync.hash_index import BITS, CHECK_MOD, MOD, HashIndex
from meshnode.domain.sync.index_cache import IndexCache

ids_st = st.sets(st.binary(min_size=32, max_size=32), max_size=120)  # hypothesis clusters them (zeros)


def ident(n: int) -> bytes:
    return hashlib.sha256(b"index-%d" % n).digest()


def reference(ids, depth: int, prefix: int) -> list[int]:
    xs = sorted(map(int.from_bytes, ids))
    shift = BITS - depth
    return xs[bisect.bisect_left(xs, prefix << shift):bisect.bisect_left(xs, (prefix + 1) << shift)]


def assert_answers_like(index: HashIndex, ids, depth: int, prefix: int, bits: int) -> None:
    xs = reference(ids, depth, prefix)
    assert index.count_and_sum(depth, prefix) == (len(xs), sum(xs) % MOD)
    assert index.members(depth, prefix) == xs
    assert index.check(depth, prefix) == sum((x >> 128) ** 2 for x in xs) % CHECK_MOD
    bits = min(bits, BITS - depth)
    if bits:
        kids = [reference(ids, depth + bits, (prefix << bits) | j) for j in range(1 << bits)]
        assert index.children(depth, prefix, bits) == ([len(k) for k in kids], [sum(k) % MOD for k in kids])


def queries(ids):
    """Ranges around the ids (most of them not empty) and some anywhere, at every depth."""
    return st.lists(st.tuples(st.integers(0, BITS), st.one_of(st.sampled_from(sorted(ids) or [bytes(32)]),
                                                            st.binary(min_size=32, max_size=32)),
                              st.integers(1, 4)), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(ids_st, st.one_of(st.none(), st.integers(0, 6)), st.data())
def test_index_answers_every_range_like_a_sorted_list(ids, bits, data):
    """Any bucket bits (0: one bucket; many ids piled in few buckets by their zeros), any depth."""
    index = HashIndex(list(ids), bits)
    assert (index.count, index.total) == (len(ids), sum(map(int.from_bytes, ids)) % MOD)
    for depth, at, split in data.draw(queries(ids)):
        prefix = int.from_bytes(at) >> (BITS - depth)
        assert_answers_like(index, ids, depth, prefix, split)
        assert (int.from_bytes(at) in index) == (at in ids)


@settings(max_examples=200, deadline=None)
@given(ids_st, ids_st, st.integers(0, 5), st.data())
def test_an_updated_index_answers_like_one_built_from_scratch_and_the_old_one_is_unchanged(old, new, bits, data):
    before = HashIndex(list(old), bits)
    asked = [(depth, int.from_bytes(at) >> (BITS - depth), split) for depth, at, split in data.draw(queries(old | new))]
    for depth, prefix, split in asked:  # what the old index worked out on the way (sorted buckets, checks)
        assert_answers_like(before, old, depth, prefix, split)
    after = before.updated(list(new - old), list(old - new))
    for depth, prefix, split in asked:
        assert_answers_like(after, new, depth, prefix, split)
        assert_answers_like(before, old, depth, prefix, split)  # a session may still be reading it


def test_an_update_that_does_not_fit_the_index_is_refused():
    index = HashIndex([ident(i) for i in range(50)])
    with pytest.raises(ValueError):
        index.updated([ident(3)], [])  # already held
    with pytest.raises(ValueError):
        index.updated([], [ident(99)])  # not held


def assert_same_index(got: HashIndex, ids) -> None:
    fresh = HashIndex(list(ids))
    assert (got.count, got.total) == (fresh.count, fresh.total)
    assert got.members(0, 0) == fresh.members(0, 0)
    for depth in (4, 9):
        assert got.children(0, 0, depth) == fresh.children(0, 0, depth)


def test_the_kept_index_follows_the_catalog_handed_in():
    """Admissions, removals (deleted or collected containers, or no longer shared), both at once,
    another peer's catalog, a want that lets far fewer through, and a restart (a new cache)."""
    cache = IndexCache(kept_min=0)
    catalog = [ident(i) for i in range(5000)]
    assert_same_index(cache.index_for(catalog), catalog)
    steps = [
        catalog + [ident(i) for i in range(5000, 5040)],                 # containers admitted
        [ident(i) for i in range(5040) if i % 97],                       # some removed
        [ident(i) for i in range(5040) if i % 89] + [ident(9000)],       # removed and admitted at once
        [ident(i) for i in range(5040) if i % 89 and i != 17],           # one container gone
        [ident(i) for i in range(200)],                                  # a narrow want: far fewer
        [ident(i) for i in range(200)],                                  # nothing changed
    ]
    for ids in steps:
        assert_same_index(cache.index_for(ids), ids)
    assert cache.updates == 5 and cache.builds == 2  # the updates were used, not only builds
    restarted = IndexCache(kept_min=0)
    assert_same_index(restarted.index_for(steps[0]), steps[0])


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 400), st.lists(st.tuples(st.sets(st.integers(0, 1000), max_size=12),
                                              st.sets(st.integers(0, 1000), max_size=12)), min_size=1, max_size=6))
def test_the_kept_index_is_that_of_every_catalog_as_containers_come_and_go(size, steps):
    """Small changes between sessions (what the cache updates rather than builds again)."""
    cache = IndexCache(kept_min=0)
    numbers = set(range(size))
    cache.index_for([ident(n) for n in numbers])
    for admitted, removed in steps:
        numbers = (numbers | admitted) - removed
        ids = [ident(n) for n in numbers]
        assert_same_index(cache.index_for(ids), ids)


def test_a_small_catalog_does_not_displace_the_kept_index_and_two_catalogs_stay_warm():
    """A peer's narrow want (its choice, trusted or not) is indexed afresh and leaves the kept
    index alone; a friend's catalog and a stranger's, alternating, each update their own."""
    cache = IndexCache(kept_min=1000)
    friend = [ident(i) for i in range(3000)]
    stranger = [ident(i) for i in range(3000) if i % 3]  # a third private: too far to update
    cache.index_for(friend)
    assert_same_index(cache.index_for([ident(7)]), [ident(7)])  # under kept_min: not kept
    for step in range(3):
        friend, stranger = friend + [ident(5000 + step)], stranger + [ident(6000 + step)]
        assert_same_index(cache.index_for(friend), friend)
        assert_same_index(cache.index_for(stranger), stranger)
    assert cache.builds == 3 and cache.updates == 5  # friend, the narrow one, stranger once; then updates


def test_what_a_session_sorts_is_not_kept_with_the_index():
    cache = IndexCache(kept_min=0)
    ids = [ident(i) for i in range(5000)]
    view = cache.index_for(ids)
    view.members(view.bits + 4, 0)  # sorts a bucket
    kept = cache._slots[0][1]
    assert view._sorted and not kept._sorted and kept.members(0, 0) == view.members(0, 0)


def test_a_kept_slot_in_use_by_one_session_is_not_read_by_another():
    """A session updates its slot's set in place: meanwhile a concurrent session (another
    thread) must not see that slot, and builds its own index instead of waiting."""
    cache = IndexCache(kept_min=0)
    ids = [ident(i) for i in range(3000)]
    cache.index_for(ids)
    in_use = cache._taken_out(len(ids), 1000)  # as a session in another thread holds it
    assert len(in_use) == 1
    other = ids + [ident(9999)]
    assert_same_index(cache.index_for(other), other)
    assert cache.builds == 2 and cache.updates == 0
