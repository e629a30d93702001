"""A dict-backed Held (meshnode.domain.gmp.rules) for tests, vectors and simulations; the store has its own."""

from __future__ import annotations

from meshnode.base.container import Container
from meshnode.domain.gmp import contest


class MemoryHeld:
    """A dict-backed :class:`Held` for tests, vectors and simulations (holds what it is given)."""

    def __init__(self, containers=(), decisions=None):
        """``decisions``: MeshConsensus values decided, in height order, as (committee, value bytes)
        (one value per height here; the rules read the first gmp_delegation one per task version);
        None: no committee here at all (an assignment under meshconsensus is then refused)."""
        self._by_did: dict[str, Container] = {}
        self._root: dict[str, str] = {}
        self.decisions: list[tuple[str, bytes]] | None = None if decisions is None else list(decisions)
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

    def decided_through(self) -> int | None:
        return None if self.decisions is None else len(self.decisions)

    def delegation_decision(self, task: str, version: str):
        for height, (committee, value) in enumerate(self.decisions or ()):
            try:
                parsed = contest.parse_delegation_value(value)
            except contest.BadValue:
                continue
            if parsed and (parsed["task"], parsed["version"]) == (task, version):
                return committee, height, 0, parsed["nomination"]
        return None

    def __contains__(self, did: str) -> bool:
        return did in self._by_did

    def __len__(self) -> int:
        return len(self._by_did)

    def all(self) -> list[Container]:
        return list(self._by_did.values())

    def all_versions(self, lineage: str) -> list[Container]:
        """Every held version of the goal or task lineage ``lineage``."""
        return [c for d, c in self._by_did.items() if self._root.get(d) == lineage]
