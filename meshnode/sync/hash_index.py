"""Counts, sums and members of aligned ranges of the id space, for format 2 of sync (``rbsr``).

Ids are 32-byte SHA-256 digests, read as 256-bit big-endian integers, so they
spread evenly over the space and a range can be named by a bit prefix: the
range ``(depth, prefix)`` holds the ids whose top ``depth`` bits equal
``prefix``. Ranges of a reconciliation are only ever of that form (the root
is ``(0, 0)``, a split in 2^b children adds b bits), so no bound is sent.

Why a lazy byte trie and not a sorted list: sorting a million 256-bit
integers takes a second here, and most of a reconciliation never looks below
the top levels. A node holds its ids unsorted; the first time a range inside
it is asked about, it drops them into 256 children by their next byte (one
pass) and keeps prefix sums of the children's counts and sums, so any
run of children is answered in O(1). Nodes of at most
``LEAF`` ids are sorted instead, with prefix sums, and answered by bisection.

The ids must be distinct (a catalog lists each container once). Ids are kept
in tuples: the garbage collector stops visiting a tuple of integers once it
has seen it, while every collection walks every young list (at a million ids,
a second of a reconciliation went to that).
"""

from __future__ import annotations

import bisect
import itertools
import operator

BITS = 256
MOD = 1 << BITS
CHECK_MOD = (1 << 127) - 1  # a Mersenne prime
LEAF = 8192  # a node of at most this many ids is sorted, not split


class _Node:
    __slots__ = ("ints", "level", "lists", "nodes", "counts", "sums", "sorted", "prefix")

    def __init__(self, ints: tuple[int, ...], level: int) -> None:
        self.ints = ints
        self.level = level  # bytes of prefix this node's ids share
        self.lists: list[list[int]] | None = None
        self.sorted: list[int] | None = None

    def open(self) -> None:
        """Split into 256 children by the next byte (large nodes), or sort (small ones)."""
        if self.sorted is not None or self.lists is not None:
            return
        ints, level = self.ints, self.level
        if len(ints) <= LEAF or level >= BITS // 8:
            self.sorted = tuple(sorted(ints))
            self.prefix = tuple(itertools.accumulate(self.sorted, initial=0))
            return
        lists: list[list[int]] = [[] for _ in range(256)]
        appenders = [x.append for x in lists]
        keys = map((BITS - 8 - 8 * level).__rrshift__, ints)
        for x, key in zip(ints, map((0xFF).__and__, keys) if level else keys):
            appenders[key](x)
        self._children([tuple(x) for x in lists])
        self.ints = None

    def _children(self, lists: list[list[int]]) -> None:
        self.lists, self.nodes = lists, [None] * 256
        self.counts = list(itertools.accumulate(map(len, lists), initial=0))
        self.sums = list(itertools.accumulate(map(sum, lists), initial=0))

    def child(self, j: int) -> "_Node":
        node = self.nodes[j]
        if node is None:
            node = self.nodes[j] = _Node(self.lists[j], self.level + 1)
        return node

    def all_ints(self) -> list[int]:
        self.open()
        if self.sorted is not None:
            return self.sorted
        return [x for j in range(256) for x in self.child(j).all_ints()]


class HashIndex:
    def __init__(self, ids: list[bytes]) -> None:
        """The root splits by the first byte of the ids as given (indexing bytes in the order they sit
        in memory is cheap); each child's integers are then made together, so that later passes over
        a child read memory in order (on scattered objects every pass here costs several times more)."""
        if len(ids) <= LEAF:
            root = _Node(tuple(map(int.from_bytes, ids)), 0)
            root.open()
        else:
            lists: list[list[bytes] | None] = [[] for _ in range(256)]
            appenders = [x.append for x in lists]
            for ident in ids:
                appenders[ident[0]](ident)
            del appenders
            children = []
            for k in range(256):  # each list freed as its tuple is made: few new objects at any time, so no
                children.append(tuple(map(int.from_bytes, lists[k])))  # collection runs (and walks a
                lists[k] = None  # million references) in the middle of this
            root = _Node((), 0)
            root._children(children)
        self._root = root
        self.count = root.counts[-1] if root.lists is not None else len(root.sorted)
        self.total = (root.sums[-1] if root.lists is not None else sum(root.sorted)) % MOD

    def _find(self, depth: int, prefix: int):
        """The node holding the range, and either the run of its children [first, last) the range
        covers, or (None, lo, hi) for a sorted node."""
        node = self._root
        while True:
            if node.sorted is None and node.lists is None:
                node.open()
            if node.sorted is not None:
                lo = prefix << (BITS - depth) if depth else 0
                hi = (prefix + 1) << (BITS - depth) if depth else MOD
                return node, None, bisect.bisect_left(node.sorted, lo), bisect.bisect_left(node.sorted, hi)
            rest = depth - 8 * node.level  # bits of the prefix below this node's level
            if rest < 8:
                first = (prefix & ((1 << rest) - 1)) << (8 - rest)
                return node, True, first, first + (1 << (8 - rest))
            node = node.child((prefix >> (rest - 8)) & 0xFF)

    def count_and_sum(self, depth: int, prefix: int) -> tuple[int, int]:
        node, run, i, j = self._find(depth, prefix)
        if run is None:
            return j - i, (node.prefix[j] - node.prefix[i]) % MOD
        return node.counts[j] - node.counts[i], (node.sums[j] - node.sums[i]) % MOD

    def children(self, depth: int, prefix: int, bits: int) -> tuple[list[int], list[int]]:
        """The counts and the sums of the 2^bits children of a range, found together (two lists, not
        a tuple a child: fewer objects for the garbage collector to count)."""
        node, run, i, j = self._find(depth, prefix)
        k = 1 << bits
        if run is None:
            items, shift, base = node.sorted, BITS - depth - bits, prefix << bits
            bounds = [i, *(bisect.bisect_left(items, (base + c) << shift, i, j) for c in range(1, k)), j]
            sums = node.prefix
            return ([b - a for a, b in zip(bounds, bounds[1:])],
                    [(sums[b] - sums[a]) % MOD for a, b in zip(bounds, bounds[1:])])
        step = (j - i) // k
        if not step:  # children below this node's children: each found on its own
            pairs = [self.count_and_sum(depth + bits, (prefix << bits) | c) for c in range(k)]
            return [c for c, _ in pairs], [s for _, s in pairs]
        counts, sums = node.counts, node.sums
        return ([counts[a + step] - counts[a] for a in range(i, j, step)],
                [(sums[a + step] - sums[a]) % MOD for a in range(i, j, step)])

    def members(self, depth: int, prefix: int) -> list[int]:
        """The ids in the range, in increasing order."""
        node, run, i, j = self._find(depth, prefix)
        if run is None:
            return node.sorted[i:j]
        return [x for k in range(i, j) for x in node.child(k).all_ints()]

    def check(self, depth: int, prefix: int) -> int:
        """A second, non-linear digest of the range: the sum of the squares of the ids' top halves
        mod 2^127 - 1. A sum names one missing id; this confirms it (several differences that add
        up to an id do not also square up to it)."""
        node, run, i, j = self._find(depth, prefix)
        if run is None:
            tops = [x >> (BITS // 2) for x in node.sorted[i:j]]
        else:
            tops = [x >> (BITS // 2) for k in range(i, j) for x in node.lists[k]]
        return sum(map(operator.mul, tops, tops)) % CHECK_MOD

    def __contains__(self, x: int) -> bool:
        node, _, i, j = self._find(BITS, x)
        return i < j
