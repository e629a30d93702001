"""Three nodes on three hosts (network namespaces): discovery, a partition, and the heal."""

from __future__ import annotations

import pytest

import netns
from meshharness import Node, nodes_on_hosts, wait_until

pytestmark = pytest.mark.netns

REASON = netns.available()


@pytest.mark.skipif(REASON is not None, reason=f"network namespaces unavailable: {REASON}")
def test_three_hosts_discover_partition_and_heal(tmp_path):
    with nodes_on_hosts(3, tmp_path) as (lab, nodes):
        for node, address in zip(nodes, lab.addresses):
            assert node.addresses and all(address in a for a in node.addresses), node.addresses

        def liveness(observer: Node) -> dict:
            return {r["did"]: r["liveness"] for r in (observer.try_call("peers") or [])}

        def all_ok():
            return all(liveness(n).get(o.did) == "ok" for n in nodes for o in nodes if o is not n)

        wait_until(all_ok, 60, "all three hosts to see each other alive")
        found = nodes[1].call("find", {"did": nodes[2].did}, timeout=60)
        assert found["connected"] and any(lab.addresses[2] in a for a in found["addresses"])

        # partition: host 2's link goes down; the others mark it stale
        lab.cut(2)
        wait_until(lambda: all(liveness(n).get(nodes[2].did) in ("stale", "dead") for n in nodes[:2]), 30,
                   "hosts 0 and 1 to mark the cut host stale")
        during = nodes[0].call("note_add", {"text": "written during the partition", "audience": "public"})["did"]

        # heal: alive again on every side, and the cut host catches up on what it missed
        lab.heal(2)
        wait_until(all_ok, 60, "every host to see every other alive after the heal")
        got = nodes[2].call("fetch", {"did": nodes[0].did, "container_did": during}, timeout=60)
        assert got["fetched"] == [during]
        assert any(r["container_did"] == during for r in nodes[2].call("notes", {"limit": 50}))
        for node in nodes:
            assert node.stop() == 0
