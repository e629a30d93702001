"""MeshConsensus with real OS processes: a committee of four on loopback decides, keeps
deciding with one member killed, and a restarted member catches up."""

from __future__ import annotations

from meshharness import Node, wait_until

FAST_CONSENSUS = {"MESHNODE_CONSENSUS_PROPOSE_MS": "400", "MESHNODE_CONSENSUS_PREVOTE_MS": "200",
                  "MESHNODE_CONSENSUS_PRECOMMIT_MS": "200", "MESHNODE_CONSENSUS_ROUND_DELTA_MS": "200",
                  "MESHNODE_CONSENSUS_RESEND_MS": "1000", "MESHNODE_CONSENSUS_EMERGENCY_SECONDS": "20"}


def committee_of(tmp_path, count: int, wrapper_for=None, env_for=None) -> list[Node]:
    nodes = [Node(tmp_path, f"v{i}", wrapper=wrapper_for(i) if wrapper_for else None,
                  env=env_for(i) if env_for else None) for i in range(count)]
    dids = ",".join(n.did for n in nodes)
    for n in nodes:
        n.env.update(FAST_CONSENSUS, MESHNODE_CONSENSUS_COMMITTEE=dids)
    return nodes


def decided(node: Node) -> list[str]:
    rows = node.try_call("consensus_decisions", {"limit": 100}) or []
    return [r["value"] for r in sorted((r for r in rows if r["status"] == "committed"), key=lambda r: r["height"])]


def test_a_committee_of_four_decides_and_survives_losing_one(tmp_path):
    nodes = committee_of(tmp_path, 4)
    try:
        nodes[0].start()
        for n in nodes[1:]:
            n.set_bootstrap(nodes[0])
            n.start()
        wait_until(lambda: all(len((n.try_call("peers") or [])) >= 3 for n in nodes), 60, "the committee to meet")
        assert nodes[0].call("consensus_status")["validators"] == 4

        nodes[1].call("consensus_propose", {"value": "first decision"})
        wait_until(lambda: all(decided(n) == ["first decision"] for n in nodes), 60, "all four to decide")

        nodes[3].kill()  # one of four gone: three hold more than two thirds of the weight
        nodes[2].call("consensus_propose", {"value": "decided by three"})
        wait_until(lambda: all(decided(n) == ["first decision", "decided by three"] for n in nodes[:3]), 90,
                   "the three survivors to decide again")

        nodes[3].set_bootstrap(nodes[0])
        nodes[3].start()  # back: it catches up from the others' commits when the mesh moves on
        nodes[0].call("consensus_propose", {"value": "with everyone back"})
        expected = ["first decision", "decided by three", "with everyone back"]
        wait_until(lambda: all(decided(n) == expected for n in nodes), 90, "the restarted member to catch up")
        for n in nodes:
            assert n.stop() == 0
    finally:
        for n in nodes:
            n.kill()
