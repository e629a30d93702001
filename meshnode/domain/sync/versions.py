"""Versions and forks of a container lineage, and which one a node shows.

A container is never edited: an update is a new container naming the old one
in ``related.previous_version``. A lineage is a first version and everything
that descends from it; its *heads* are the versions nothing else replaces.
Two heads are a fork: both are kept. The view shows one head, chosen by a
rule every node applies the same way, from the containers alone:

1. the later ``head.timestamp``,
2. then the larger container DID (an arbitrary but shared tie-break).

Not the authors' trust: trust is each node's own (``agent_reputation``), so
nodes holding the same versions would show different heads, and a view
drawn when a version arrived would depend on what this node thought then.

Pure: containers in, a choice out.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from meshnode.base.container import Container

DEFAULT_TRUST = 0.5


def previous_versions(c: Container) -> list[str]:
    return list(c.related.get("previous_version", []))


def lineage_root(did: str, previous: Mapping[str, list[str]]) -> str:
    """The first version reached by following previous_version links (the smallest DID at a merge);
    a link to a version this node does not hold ends the walk there. Cycles cannot occur for
    content-derived DIDs, but the walk is bounded anyway."""
    seen: set[str] = set()
    current = did
    while current not in seen and len(seen) < 10_000:
        seen.add(current)
        parents = [p for p in previous.get(current, []) if p in previous]
        if not parents:
            return current
        current = min(parents)
    return min(seen)


def heads(versions: Iterable[Container]) -> list[Container]:
    versions = list(versions)
    replaced = {p for c in versions for p in previous_versions(c)}
    return [c for c in versions if c.did not in replaced]


def choose(versions: Iterable[Container]) -> tuple[Container, int]:
    """The head the view shows, and how many other heads (forks) there are."""
    candidates = heads(versions)
    best = max(candidates, key=lambda c: (c.timestamp_ms, c.did))
    return best, len(candidates) - 1
