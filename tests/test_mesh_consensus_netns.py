"""MeshConsensus split 2/2 across network namespaces: neither half has a quorum, so nothing is
committed (no split brain) — each side only takes a provisional emergency decision — and
after the heal the committee decides and the emergency decisions are revisited."""

from __future__ import annotations

import pytest

import netns
from meshharness import Node, nodes_on_hosts, wait_until
from test_mesh_consensus import FAST_CONSENSUS, decided

pytestmark = pytest.mark.netns

REASON = netns.available()


def configure(nodes: list[Node]) -> None:
    dids = ",".join(n.did for n in nodes)
    for n in nodes:
        n.env.update(FAST_CONSENSUS, MESHNODE_CONSENSUS_COMMITTEE=dids, MESHNODE_CONSENSUS_EMERGENCY_SECONDS="4")


def emergencies(node: Node) -> list[dict]:
    return [r for r in (node.try_call("consensus_decisions", {"limit": 100}) or [])
            if r["status"] == "emergency_consensus"]


@pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")
def test_a_two_two_split_decides_nothing_and_resumes_after_the_heal(tmp_path):
    with nodes_on_hosts(4, tmp_path, prepare=configure) as (lab, nodes):
        wait_until(lambda: all(len(n.try_call("peers") or []) >= 3 for n in nodes), 60, "the committee to meet")
        nodes[0].call("consensus_propose", {"value": "before the split"})
        wait_until(lambda: all(decided(n) == ["before the split"] for n in nodes), 60, "a first decision")

        lab.partition([2, 3])
        nodes[0].call("consensus_propose", {"value": "left wants this"})
        nodes[2].call("consensus_propose", {"value": "right wants that"})
        # each side gives up waiting for a quorum and decides provisionally, alone
        wait_until(lambda: all(emergencies(n) for n in nodes), 60, "provisional emergency decisions on both sides")
        assert all(decided(n) == ["before the split"] for n in nodes)  # nothing committed: no split brain

        lab.join()
        wait_until(lambda: all(len(decided(n)) == 3 for n in nodes)
                   and len({tuple(decided(n)) for n in nodes}) == 1, 120, "the committee to decide after the heal")
        assert set(decided(nodes[0])[1:]) == {"left wants this", "right wants that"}
        wait_until(lambda: not any(emergencies(n) for n in nodes), 30, "the emergency decisions to be revisited")
        for node in nodes:
            assert node.stop() == 0
