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

from meshnode.sync.hash_index import HashIndex, bucket_bits

REBUILD_SHARE = 8  # more changes than 1/8 of the catalog (and than SMALL): index it from scratch
SMALL = 256


class IndexCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: set[bytes] | None = None
        self._index: HashIndex | None = None
        self.builds = self.updates = 0  # counted for tests and metrics

    def index_for(self, ids: list[bytes]) -> HashIndex:
        """The index of ``ids`` (distinct), from the kept one when the change is small."""
        with self._lock:
            kept, index = self._ids, self._index
            if kept is not None and abs(bucket_bits(len(ids)) - index.bits) <= 1:  # buckets still fit
                added = list(itertools.filterfalse(kept.__contains__, ids))  # no Python loop: a fifth faster
                stays = len(ids) - len(added)  # the ids distinct: kept ones still in the catalog
                if len(added) + len(kept) - stays <= max(len(ids) // REBUILD_SHARE, SMALL):
                    removed = list(kept.difference(ids)) if stays < len(kept) else []
                    self._index = index.updated(added, removed)
                    kept.difference_update(removed)
                    kept.update(added)
                    self.updates += 1
                    return self._index
            self._ids, self._index = set(ids), HashIndex(ids)
            self.builds += 1
            return self._index
