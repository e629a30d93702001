"""Containers this node will not take again: what its quotas refused or evicted.

Sync works out what each side lacks, and a container refused over its
author's quota, or evicted over the global one, is lacked again at the next
session: without a memory of it, every round would fetch it (or take a push
of it) only to refuse or evict it again. Kept in memory, bounded, oldest
forgotten first: after a restart or an overflow a container costs one more
refusal, which is cheaper than a table strangers could grow on disk. Entries
of an author who became known are dropped (known authors have no quota).
"""

from __future__ import annotations

from typing import Hashable, Iterable

NOT_WANTED_KEPT = 8192  # full, measured: 1.1 MB (container DIDs), 1.7 MB ((peer, container DID) pairs)


class NotWanted:
    """Keys (container DIDs, or (peer, container DID) pairs) with the author each was refused for."""

    def __init__(self, limit: int = NOT_WANTED_KEPT):
        self.limit = limit
        self._authors: dict[Hashable, str] = {}

    def add(self, key: Hashable, author: str) -> None:
        self._authors.pop(key, None)
        self._authors[key] = author
        while len(self._authors) > self.limit:
            del self._authors[next(iter(self._authors))]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._authors

    def __len__(self) -> int:
        return len(self._authors)

    def forget_authors(self, known: Iterable[str]) -> None:
        """Drop the entries of authors who are known now."""
        known = frozenset(known)
        self._authors = {k: a for k, a in self._authors.items() if a not in known}
