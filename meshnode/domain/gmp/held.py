"""A dict-backed Held (meshnode.domain.gmp.rules) for tests, vectors and simulations; the store has its own."""

from __future__ import annotations

from meshnode.base.container import Container


class MemoryHeld:
    """A dict-backed :class:`Held` for tests, vectors and simulations (holds what it is given)."""

    def __init__(self, containers=()):
        self._by_did: dict[str, Container] = {}
        self._root: dict[str, str] = {}
        for c in containers:
            self.add(c)

    def add(self, c: Container) -> None:
        self._by_did[c.did] = c
        if c.cls in ("goal", "task"):
            parents = c.related.get("previous_version", [])
            self._root[c.did] = self._root.get(parents[0], parents[0]) if parents else c.did

    def get(self, did: str) -> Container | None:
        return self._by_did.get(did)

    def root(self, did: str) -> str | None:
        return self._root.get(did)

    def __contains__(self, did: str) -> bool:
        return did in self._by_did

    def __len__(self) -> int:
        return len(self._by_did)

    def all(self) -> list[Container]:
        return list(self._by_did.values())

    def all_versions(self, lineage: str) -> list[Container]:
        """Every held version of the goal or task lineage ``lineage``."""
        return [c for d, c in self._by_did.items() if self._root.get(d) == lineage]
