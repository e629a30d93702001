"""The sync index kept between sessions: a node reconciles again and again over nearly the same
catalog, and building the index of a million ids costs a second (``hash_index``).

What is kept is the last catalog's ids (a set) and its index. A session hands in
its own catalog's ids, the one it is about to reconcile: the ids not in the kept
set are the additions, the kept ids not in the catalog the removals, and the
index the session gets is the kept one updated by exactly those. So the index is
always that of the catalog handed in, whatever happened in between (containers
admitted, deleted, collected, sharing changed, another peer's catalog): it is
derived from the catalog each time, never kept in step with the store by hand,
and it cannot go stale. A restart starts with nothing kept (the first session
builds it). Sessions get indexes no later update changes (``HashIndex.updated``
makes a new one), so sessions may overlap, in threads too.

Cost a session: one pass over the catalog's ids (a set lookup each), plus the
changed buckets; a catalog far from the kept one (another want, a first session)
is indexed from scratch.
"""

from __future__ import annotations

import itertools
import threading

from meshnode.domain.sync.hash_index import HashIndex, bucket_bits

REBUILD_SHARE = 8  # more changes than 1/8 of the catalog (and than SMALL): index it from scratch
SMALL = 256
SLOTS = 2  # catalogs kept: a friend's and a stranger's sessions alternate without rebuilding each other's
KEPT_MIN = 4096  # a smaller catalog is indexed afresh (milliseconds) and never displaces a kept one


class IndexCache:
    """Thread-safe: a session takes a kept slot out while it works on it (so no other session
    reads the set it changes in place) and puts the result back; the lock only guards the list
    of slots, never a build or a pass over a catalog, so a session on the trio loop never waits
    for another session's build in a worker thread (a concurrent one builds its own instead)."""

    def __init__(self, kept_min: int = KEPT_MIN) -> None:
        self._lock = threading.Lock()
        self._slots: list[tuple[set[bytes], HashIndex]] = []  # most recently used first
        self._kept_min = kept_min
        self.builds = self.updates = 0  # counted for tests and metrics

    def index_for(self, ids: list[bytes]) -> HashIndex:
        """The index of ``ids`` (distinct), from a kept one when the change is small. The caller
        gets its own view: what its session sorts while it searches is not kept."""
        if len(ids) < self._kept_min:
            self.builds += 1
            return HashIndex(ids)
        limit = max(len(ids) // REBUILD_SHARE, SMALL)
        fits = self._taken_out(len(ids), limit)
        for n, (kept, index) in enumerate(fits):
            added = list(itertools.filterfalse(kept.__contains__, ids))  # no Python loop: a fifth faster
            stays = len(ids) - len(added)  # the ids distinct: kept ones still in the catalog
            if len(added) + len(kept) - stays > limit:
                continue
            removed = list(kept.difference(ids)) if stays < len(kept) else []
            fresh = index.updated(added, removed)
            kept.difference_update(removed)  # (taken out: no other session reads it)
            kept.update(added)
            self._put_back([(kept, fresh), *fits[:n], *fits[n + 1:]])
            self.updates += 1
            return fresh.view()
        fresh = HashIndex(ids)
        self._put_back([(set(ids), fresh), *fits])
        self.builds += 1
        return fresh.view()

    def _taken_out(self, count: int, limit: int) -> list[tuple[set[bytes], HashIndex]]:
        """The kept slots that may fit a catalog of ``count`` ids, taken out of the cache."""
        fits, others = [], []
        with self._lock:
            for kept, index in self._slots:
                fit = abs(bucket_bits(count) - index.bits) <= 1 and abs(len(kept) - count) <= limit
                (fits if fit else others).append((kept, index))
            self._slots = others
        return fits

    def _put_back(self, slots: list[tuple[set[bytes], HashIndex]]) -> None:
        with self._lock:
            self._slots = [*slots, *self._slots][:SLOTS]
