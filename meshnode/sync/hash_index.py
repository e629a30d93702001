"""Counts, sums and members of aligned ranges of the id space, for format 2 of sync (``rbsr``).

Ids are 32-byte SHA-256 digests, read as 256-bit big-endian integers, so they
spread evenly over the space and a range can be named by a bit prefix: the
range ``(depth, prefix)`` holds the ids whose top ``depth`` bits equal
``prefix``. Ranges of a reconciliation are only ever of that form (the root
is ``(0, 0)``, a split in 2^b children adds b bits), so no bound is sent.

Why a lazy byte trie and not a sorted list: sorting a million 256-bit
integers takes a second here, and most of a reconciliation never looks below
the top levels. A node holds its ids unsorted; the first time a range inside
it is asked about, it drops them into 256 children by their next byte (a
cheap pass: indexing bytes) and keeps prefix sums of the children's counts
and sums, so any run of children is answered in O(1). Nodes of at most
``LEAF`` ids are sorted instead, with prefix sums, and answered by bisection.

The ids must be distinct (a catalog lists each container once).
"""

from __future__ import annotations

import bisect
import itertools
import operator

BITS = 256
MOD = 1 << BITS
CHECK_MOD = (1 << 127) - 1  # a Mersenne prime
LEAF = 4096  # a node of at most this many ids is sorted (about a millisecond), not split


class _Node:
    __slots__ = ("ids", "level", "count", "total", "children", "counts", "sums", "sorted", "prefix_sums")

    def __init__(self, ids: list[bytes], level: int, total: int | None = None) -> None:
        self.ids = ids
        self.level = level  # bytes of prefix this node's ids share
        self.count = len(ids)
        self.total = sum(map(int.from_bytes, ids)) if total is None else total
        self.children: list[_Node] | None = None
        self.sorted: list[int] | None = None

    def open(self) -> None:
        """Split into 256 children by the next byte (large nodes), or sort (small ones)."""
        if self.count <= LEAF or self.level >= BITS // 8:
            if self.sorted is None:
                self.sorted = sorted(map(int.from_bytes, self.ids))
                self.prefix_sums = list(itertools.accumulate(self.sorted, initial=0))
            return
        if self.children is not None:
            return
        lists: list[list[bytes]] = [[] for _ in range(256)]
        appenders = [x.append for x in lists]
        level = self.level
        for ident in self.ids:
            appenders[ident[level]](ident)
        self.children = [_Node(x, level + 1) for x in lists]
        self.counts = list(itertools.accumulate((c.count for c in self.children), initial=0))
        self.sums = list(itertools.accumulate((c.total for c in self.children), initial=0))

    def all_ints(self) -> list[int]:
        self.open()
        if self.sorted is not None:
            return self.sorted
        return [x for child in self.children for x in child.all_ints()]


class HashIndex:
    def __init__(self, ids: list[bytes]) -> None:
        root = self._root = _Node(list(ids), 0, total=0)
        root.open()
        root.total = root.sums[-1] if root.children is not None else sum(root.sorted)
        self.count = root.count
        self.total = root.total % MOD

    def _find(self, depth: int, prefix: int):
        """The node holding the range, and either the run of its children [first, last) the range
        covers, or (None, lo, hi) for a sorted node."""
        node = self._root
        while True:
            node.open()
            level_bits = 8 * node.level
            if node.sorted is not None:
                lo = prefix << (BITS - depth) if depth else 0
                hi = (prefix + 1) << (BITS - depth) if depth else MOD
                return node, None, bisect.bisect_left(node.sorted, lo), bisect.bisect_left(node.sorted, hi)
            rest = depth - level_bits  # bits of the prefix below this node's level
            if rest < 8:
                first = (prefix & ((1 << rest) - 1)) << (8 - rest)
                return node, True, first, first + (1 << (8 - rest))
            node = node.children[(prefix >> (rest - 8)) & 0xFF]

    def count_and_sum(self, depth: int, prefix: int) -> tuple[int, int]:
        node, run, i, j = self._find(depth, prefix)
        if run is None:
            return j - i, (node.prefix_sums[j] - node.prefix_sums[i]) % MOD
        return node.counts[j] - node.counts[i], (node.sums[j] - node.sums[i]) % MOD

    def members(self, depth: int, prefix: int) -> list[int]:
        """The ids in the range, in increasing order."""
        node, run, i, j = self._find(depth, prefix)
        if run is None:
            return node.sorted[i:j]
        return [x for child in node.children[i:j] for x in child.all_ints()]

    def check(self, depth: int, prefix: int) -> int:
        """A second, non-linear digest of the range: the sum of the squares of the ids' top halves
        mod 2^127 - 1. A sum names one missing id; this confirms it (several differences that add
        up to an id do not also square up to it)."""
        tops = list(map((BITS // 2).__rrshift__, self.members(depth, prefix)))
        return sum(map(operator.mul, tops, tops)) % CHECK_MOD

    def __contains__(self, x: int) -> bool:
        node, _, i, j = self._find(BITS, x)
        return i < j
