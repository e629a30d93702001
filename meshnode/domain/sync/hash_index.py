"""Counts, sums and members of aligned ranges of the id space, for format 2 of sync (``rbsr``).

Ids are 32-byte SHA-256 digests, read as 256-bit big-endian integers, so they
spread evenly over the space and a range can be named by a bit prefix: the
range ``(depth, prefix)`` holds the ids whose top ``depth`` bits equal
``prefix``. Ranges of a reconciliation are only ever of that form (the root
is ``(0, 0)``, a split in 2^b children adds b bits), so no bound is sent.

Why buckets and no sort: sorting a million 256-bit integers takes a second
here (a sort of 256 buckets of 4k, half of that), while dropping them into
2^k buckets by their top k bits (about ``PER_BUCKET`` ids a bucket) is one
pass, and prefix sums of the buckets' counts and sums answer any range of
depth <= k in O(1). Reconciliation rarely looks deeper; when it does, that one
bucket is sorted (with prefix sums) and answered by bisection, so a bucket
stuffed by ids ground to one prefix costs a sort, never a scan a question.

The ids must be distinct (a catalog lists each container once). Buckets are
tuples: the garbage collector stops visiting a tuple of integers once it has
seen it, while every collection walks every list.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator

BITS = 256
MOD = 1 << BITS
CHECK_MOD = (1 << 127) - 1  # a Mersenne prime
PER_BUCKET = 12  # ids a bucket holds on average (at most 2^MAX_BUCKET_BITS buckets)
MAX_BUCKET_BITS = 16


def bucket_bits(count: int) -> int:
    return max(0, min(MAX_BUCKET_BITS, int(math.log2(max(count, 1) / PER_BUCKET)) if count > PER_BUCKET else 0))


class HashIndex:
    def __init__(self, ids: list[bytes], bits: int | None = None) -> None:
        """``bits``: the bucket bits (a test hook; by default from the count)."""
        self.bits = bucket_bits(len(ids)) if bits is None else bits
        self._set(_buckets(ids, self.bits), None)

    def _set(self, buckets: list[tuple[int, ...]], bucket_sums: list[int] | None) -> None:
        self._buckets = buckets
        self._bucket_sums = list(map(sum, buckets)) if bucket_sums is None else bucket_sums
        self._counts = list(itertools.accumulate(map(len, buckets), initial=0))
        self._sums = list(itertools.accumulate(self._bucket_sums, initial=0))
        self._sorted: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._checks: dict[int, int] = {}  # bucket -> its check, made when first asked
        self.count = self._counts[-1]
        self.total = self._sums[-1] % MOD

    def updated(self, added: list[bytes], removed: list[bytes]) -> "HashIndex":
        """A new index of these ids with ``added`` (absent here) and without ``removed`` (present);
        this one is left as it is (a session may still be reading it) and untouched buckets are
        shared. Costs the changed buckets plus O(2^bits)."""
        shift = BITS - self.bits
        changes: dict[int, tuple[list[int], set[int]]] = {}
        for x in map(int.from_bytes, added):
            changes.setdefault(x >> shift, ([], set()))[0].append(x)
        for x in map(int.from_bytes, removed):
            changes.setdefault(x >> shift, ([], set()))[1].add(x)
        buckets, bucket_sums = list(self._buckets), list(self._bucket_sums)
        for b, (plus, minus) in changes.items():
            kept = [x for x in buckets[b] if x not in minus]
            if len(kept) != len(buckets[b]) - len(minus) or not set(plus).isdisjoint(buckets[b]):
                raise ValueError("an update removes an id the index lacks or adds one it holds")
            buckets[b] = tuple(kept + plus)
            bucket_sums[b] = sum(buckets[b])
        new = HashIndex.__new__(HashIndex)
        new.bits = self.bits
        new._set(buckets, bucket_sums)
        checks = dict(self._checks)  # one C call: safe while another session's thread adds to it
        for b in changes:
            checks.pop(b, None)
        new._checks = checks
        return new

    def view(self) -> "HashIndex":
        """The same index with its own sorted buckets: what one session sorts is dropped with it,
        not kept with the index (bucket check values are shared: they never change)."""
        new = HashIndex.__new__(HashIndex)
        new.__dict__.update(self.__dict__)
        new._sorted = {}
        return new

    def _run(self, depth: int, prefix: int) -> tuple[int, int]:
        """The buckets [lo, hi) a range of depth <= bits covers."""
        spread = self.bits - depth
        return prefix << spread, (prefix + 1) << spread

    def _bucket(self, b: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Bucket ``b`` sorted, with its prefix sums (made the first time it is asked below the buckets)."""
        found = self._sorted.get(b)
        if found is None:
            items = tuple(sorted(self._buckets[b]))
            found = self._sorted[b] = items, tuple(itertools.accumulate(items, initial=0))
        return found

    def _within(self, depth: int, prefix: int) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
        """A range deeper than the buckets: its bucket (sorted, prefix sums) and its slice [i, j)."""
        items, sums = self._bucket(prefix >> (depth - self.bits))
        shift = BITS - depth
        return items, sums, bisect.bisect_left(items, prefix << shift), bisect.bisect_left(items, (prefix + 1) << shift)

    def count_and_sum(self, depth: int, prefix: int) -> tuple[int, int]:
        if depth <= self.bits:
            lo, hi = self._run(depth, prefix)
            return self._counts[hi] - self._counts[lo], (self._sums[hi] - self._sums[lo]) % MOD
        _, sums, i, j = self._within(depth, prefix)
        return j - i, (sums[j] - sums[i]) % MOD

    def children(self, depth: int, prefix: int, bits: int) -> tuple[list[int], list[int]]:
        """The counts and the sums of the 2^bits children of a range, found together (two lists, not
        a tuple a child: fewer objects for the garbage collector to count)."""
        if depth + bits <= self.bits:
            lo, hi = self._run(depth, prefix)
            step, counts, sums = 1 << (self.bits - depth - bits), self._counts, self._sums
            return ([counts[a + step] - counts[a] for a in range(lo, hi, step)],
                    [(sums[a + step] - sums[a]) % MOD for a in range(lo, hi, step)])
        if depth < self.bits:  # the children cut through buckets: each bucket's children, in order
            lo, hi = self._run(depth, prefix)
            counts, sums, below = [], [], depth + bits - self.bits
            for b in range(lo, hi):
                c, t = self.children(self.bits, b, below)
                counts += c
                sums += t
            return counts, sums
        items, sums, i, j = self._within(depth, prefix)
        shift, base = BITS - depth - bits, prefix << bits
        bounds = [i, *(bisect.bisect_left(items, (base + c) << shift, i, j) for c in range(1, 1 << bits)), j]
        return ([b - a for a, b in zip(bounds, bounds[1:])],
                [(sums[b] - sums[a]) % MOD for a, b in zip(bounds, bounds[1:])])

    def members(self, depth: int, prefix: int) -> list[int]:
        """The ids in the range, in increasing order."""
        if depth <= self.bits:
            lo, hi = self._run(depth, prefix)
            return [x for b in range(lo, hi) for x in self._bucket(b)[0]]
        items, _, i, j = self._within(depth, prefix)
        return list(items[i:j])

    def check(self, depth: int, prefix: int) -> int:
        """A second, non-linear digest of the range: the sum of the squares of the ids' top halves
        mod 2^127 - 1. A sum names one missing id; this confirms it (several differences that add
        up to an id do not also square up to it)."""
        if depth <= self.bits:
            lo, hi = self._run(depth, prefix)
            checks = self._checks
            return sum(checks[b] if b in checks else self._bucket_check(b) for b in range(lo, hi)) % CHECK_MOD
        items, _, i, j = self._within(depth, prefix)
        return _check(items[i:j])

    def _bucket_check(self, b: int) -> int:
        value = self._checks[b] = _check(self._buckets[b])  # kept by ``updated`` for unchanged buckets
        return value

    def __contains__(self, x: int) -> bool:
        _, _, i, j = self._within(BITS, x)
        return i < j


def _check(items) -> int:
    tops = [x >> (BITS // 2) for x in items]
    return sum(map(operator.mul, tops, tops)) % CHECK_MOD


def _buckets(ids: list[bytes], k: int) -> list[tuple[int, ...]]:
    """The ids as integers in 2^k buckets by their top k bits, in two steps: by the top byte, then
    each group (small enough to stay in the cache) by the rest of the k bits (one pass over 65536
    lists at once misses the cache on every item: three times slower)."""
    ints = list(map(int.from_bytes, ids))  # in the order the ids sit in memory
    top = min(k, 8)
    if not top:
        return [tuple(ints)]
    groups: list[list[int] | None] = [[] for _ in range(1 << top)]
    appenders = [x.append for x in groups]
    for key, x in zip(map((BITS - top).__rrshift__, ints), ints):
        appenders[key](x)
    del appenders, ints
    low, shift, out = k - top, BITS - k, []
    if not low:
        return [tuple(g) for g in groups]
    mask = (1 << low) - 1
    for g in range(len(groups)):
        lists: list[list[int]] = [[] for _ in range(1 << low)]
        appenders = [x.append for x in lists]
        for key, x in zip(map(mask.__and__, map(shift.__rrshift__, groups[g])), groups[g]):
            appenders[key](x)
        groups[g] = None  # freed as it is done: few objects alive at once
        out += map(tuple, lists)
    return out
