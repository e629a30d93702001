"""CogSync across a partition: four hosts in network namespaces split 2/2, both sides keep
writing (including concurrent versions of one concept: a fork), and after the heal every node
holds the same knowledge and shows the same version of every lineage."""

from __future__ import annotations

import pytest

import netns
from meshharness import Node, nodes_on_hosts, wait_until

pytestmark = pytest.mark.netns

REASON = netns.available()


def knowledge(node: Node) -> tuple | None:
    """What a node holds and shows: every lineage's shown version and fork count, per view."""
    views = []
    for cmd in ("diary", "concepts", "links"):
        rows = node.try_call(cmd, {"limit": 1000})
        if rows is None:
            return None
        views.append(sorted((r["lineage"], r["container_did"], r.get("forks")) for r in rows))
    return tuple(tuple(v) for v in views)


class Missing:
    """A falsy answer that says which of several conditions did not hold (for wait_until's report)."""

    def __init__(self, failed: list[str]):
        self.failed = failed

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"not yet: {', '.join(self.failed)}"

    @classmethod
    def unless(cls, **conditions: bool):
        failed = [name for name, ok in conditions.items() if not ok]
        return True if not failed else cls(failed)


def holds(node: Node, view: str, did: str) -> bool:
    return any(did in (r["container_did"], r["lineage"]) for r in (node.try_call(view, {"limit": 1000}) or []))


@pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")
def test_cogsync_converges_after_a_partition_heals(tmp_path):
    with nodes_on_hosts(4, tmp_path) as (lab, nodes):
        for x in nodes:
            for y in nodes:
                if x is not y:
                    x.call("friend", {"did": y.did})
        concept = nodes[0].call("concept_add", {"label": "mesh", "description": "v1"})["did"]
        wait_until(lambda: all(holds(n, "concepts", concept) for n in nodes), 90, "everyone to get the concept")

        lab.partition([2, 3])
        left = nodes[1].call("concept_add", {"label": "mesh", "description": "left", "previous": [concept]})["did"]
        right = nodes[2].call("concept_add", {"label": "mesh", "description": "right", "previous": [concept]})["did"]
        d0 = nodes[0].call("diary_add", {"text": "left side, during the split"})["did"]
        d3 = nodes[3].call("diary_add", {"text": "right side, during the split"})["did"]
        animal = nodes[3].call("concept_add", {"label": "animal"})["did"]
        link = nodes[3].call("link_add", {"source": concept, "relation": "is-a", "targets": [animal]})["did"]
        wait_until(lambda: Missing.unless(h1_has_d0=holds(nodes[1], "diary", d0), h2_has_d3=holds(nodes[2], "diary", d3)),
                   90, "each side to sync within itself")
        assert not holds(nodes[1], "diary", d3) and not holds(nodes[2], "diary", d0)  # the split is real

        lab.join()
        wait_until(lambda: len({knowledge(n) for n in nodes}) == 1 and knowledge(nodes[0]) is not None
                   and holds(nodes[0], "diary", d3) and holds(nodes[3], "diary", d0), 180,
                   "all four nodes to hold and show the same knowledge after the heal")
        diary, concepts, links = knowledge(nodes[0])
        assert len(diary) == 2 and len(links) == 1 and links[0][1] == link
        mesh_row = next(r for r in concepts if r[0] == concept)
        assert mesh_row[1] in (left, right) and mesh_row[2] == 1  # one fork, the same head everywhere
        for node in nodes:
            assert node.stop() == 0
