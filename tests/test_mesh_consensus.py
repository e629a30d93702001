"""MeshConsensus with real OS processes: a committee of four on loopback decides, keeps
deciding with one member killed, and a restarted member catches up."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time

from meshharness import Node, wait_until

FAST_CONSENSUS = {"MESHNODE_CONSENSUS_PROPOSE_MS": "400", "MESHNODE_CONSENSUS_PREVOTE_MS": "200",
                  "MESHNODE_CONSENSUS_PRECOMMIT_MS": "200", "MESHNODE_CONSENSUS_ROUND_DELTA_MS": "200",
                  "MESHNODE_CONSENSUS_RESEND_MS": "1000", "MESHNODE_CONSENSUS_EMERGENCY_SECONDS": "20"}


# reputation rounds only when a test asks for one: what each node publishes is then what the
# test's own rounds publish (the node's early rounds would publish some views before the decisions)
ROUNDS_ON_REQUEST = {"MESHNODE_NET_REPUTATION_SECONDS": "3600", "MESHNODE_NET_REPUTATION_FIRST_SECONDS": "3600"}


def committee_of(tmp_path, count: int, wrapper_for=None, env_for=None) -> list[Node]:
    nodes = [Node(tmp_path, f"v{i}", wrapper=wrapper_for(i) if wrapper_for else None,
                  env=env_for(i) if env_for else None) for i in range(count)]
    dids = ",".join(n.did for n in nodes)
    for n in nodes:
        n.env.update(FAST_CONSENSUS, **ROUNDS_ON_REQUEST, MESHNODE_CONSENSUS_COMMITTEE=dids)
    return nodes


def trust_in(node: Node) -> dict[str, float]:
    db = sqlite3.connect(node.home / "data" / "meshnode.db")
    try:
        return dict(db.execute("SELECT agent_id, reputation_score FROM agent_reputation r WHERE id ="
                               " (SELECT max(id) FROM agent_reputation WHERE agent_id = r.agent_id)"))
    finally:
        db.close()


def report(nodes: list[Node]) -> list:
    """Where each node stands, and what it logged lately: for a failure's message."""
    out = []
    for n in nodes:
        logged = []
        while not n.lines.empty():
            line = n.lines.get_nowait()
            if line is not None:
                n.output.append(line)
        logged = n.output[-30:]
        out.append((n.name, decided(n), n.try_call("consensus_status"), logged))
    return out


@contextlib.contextmanager
def reported(nodes: list[Node]):
    """Kill the nodes afterwards; on a failed assertion, first say where each stands."""
    try:
        yield
    except AssertionError:
        print(report(nodes))
        raise
    finally:
        for n in nodes:
            n.kill()


def heartbeats_sent(node: Node) -> int:
    return sum(m["value"] for m in node.call("metrics") if m["name"] == "heartbeats_sent")


def start_committee(nodes: list[Node]) -> None:
    """Start the first node, then the others bootstrapped from it; wait until all see each other."""
    nodes[0].start()
    for n in nodes[1:]:
        n.set_bootstrap(nodes[0])
        n.start()
    wait_until(lambda: all(len(n.try_call("peers") or []) >= len(nodes) - 1 for n in nodes), 60,
               "the committee to meet")


def decided(node: Node) -> list[str]:
    rows = node.try_call("consensus_decisions", {"limit": 100}) or []
    return [r["value"] for r in sorted((r for r in rows if r["status"] == "committed"), key=lambda r: r["height"])]


def test_a_committee_of_four_decides_and_survives_losing_one(tmp_path):
    nodes = committee_of(tmp_path, 4)
    with reported(nodes):
        start_committee(nodes)
        assert nodes[0].call("consensus_status")["validators"] == 4

        nodes[1].call("consensus_propose", {"value": "first decision"})
        wait_until(lambda: all(decided(n) == ["first decision"] for n in nodes), 60, "all four to decide")

        # the validators whose precommits decided earned consensus conduct evidence: their trust
        # rose above the prior, and the node published its view as signed trust containers
        round_ = nodes[0].call("reputation_round")
        assert round_["published"]
        trust = trust_in(nodes[0])
        signers = {p for p in nodes[0].call("consensus_status")["last_signers"]}
        assert signers - {nodes[0].did} and all(trust[d] > 0.5 for d in signers - {nodes[0].did})

        nodes[3].kill()  # one of four gone: three hold more than two thirds of the weight
        nodes[2].call("consensus_propose", {"value": "decided by three"})
        wait_until(lambda: all(decided(n) == ["first decision", "decided by three"] for n in nodes[:3]), 90,
                   "the three survivors to decide again")

        # let the decision leave GossipSub's replay window (3 gossip heartbeats of 1 s), which would
        # otherwise hand it to the restarted node: the others' own heartbeats measure the time passing
        # (one per connected peer every 0.5 s: at least six seconds of them)
        beats, peers = heartbeats_sent(nodes[0]), max(1, nodes[0].call("formation")["connected"])
        wait_until(lambda: heartbeats_sent(nodes[0]) >= beats + 12 * peers, 60, "six seconds of node 0's heartbeats")
        nodes[3].set_bootstrap(nodes[0])
        started = time.monotonic()
        nodes[3].start()  # back: it asks for the commits it missed, with nothing new proposed
        wait_until(lambda: decided(nodes[3]) == ["first decision", "decided by three"], 60,
                   "the restarted member to learn the decision it missed")
        print(f"restarted validator caught up {time.monotonic() - started:.2f} s after its start began")
        # the proposer reports the height its value was committed at (the third decision: height 2)
        out = nodes[3].cli("consensus", "propose", "with everyone back", "--wait", "50")
        assert "committed at height 2" in out, out
        expected = ["first decision", "decided by three", "with everyone back"]
        wait_until(lambda: all(decided(n) == expected for n in nodes), 90, "everyone to decide it")
        listed = json.loads(nodes[3].cli("consensus", "decisions", "--json"))
        committed = sorted((r for r in listed if r["status"] == "committed"), key=lambda r: r["height"])
        assert [r["value"] for r in committed] == expected, listed
        for n in nodes:
            assert n.stop() == 0
        offline = json.loads(nodes[1].cli("consensus", "decisions", "--json"))  # the store, without a node
        assert len(offline) == 3


def test_the_committee_moves_to_a_new_epoch_weighted_by_published_trust(tmp_path):
    nodes = committee_of(tmp_path, 4)
    with reported(nodes):
        start_committee(nodes)
        # enough conduct to earn trust above the consensus floor: conduct is earned per decided height
        # (a precommit signs a whole block), so each value is asked once the one before is decided
        values = [f"decision {i}" for i in range(16)]
        for i, value in enumerate(values):
            nodes[i % 4].call("consensus_propose", {"value": value, "wait_seconds": 30})
        wait_until(lambda: all(len(decided(n)) == 16 for n in nodes), 120, "sixteen decisions")
        for n in nodes:  # each publishes its view of the others as signed trust statements (gossiped)
            assert len(n.call("reputation_round")["published"]) == 3
        wait_until(lambda: all(n.call("status")["counts"].get("class:trust", 0) >= 12 for n in nodes), 60,
                   "everyone to hold everyone's statements")

        nodes[0].call("consensus_next_committee")
        wait_until(lambda: all(n.call("consensus_status")["committee"].startswith("e1-") for n in nodes), 60,
                   "all four to move to epoch 1")
        statuses = [n.call("consensus_status") for n in nodes]
        assert len({s["committee"] for s in statuses}) == 1  # the same committee everywhere, derived independently
        members = statuses[0]["members"]
        assert len(members) >= 3 and all(550 <= w <= 900 for w in members.values())  # trust-weighted, floor 0.55
        member = next(n for n in nodes if n.did in members)  # requests are taken from validators
        member.call("consensus_propose", {"value": "decided in epoch 1"})
        wait_until(lambda: all(decided(n)[-1] == "decided in epoch 1" for n in nodes), 60, "a decision in epoch 1")
        for n in nodes:
            assert n.stop() == 0


def test_a_burst_is_decided_in_blocks_in_one_order_on_every_node(tmp_path):
    """Values asked at once on every node are decided in fewer heights than values, and every
    node lists the same values at the same height and index; each block's precommits sign the
    Merkle root of its values, so a stored value's inclusion proof checks against them alone."""
    from meshnode.domain.consensus.committee import Committee
    from meshnode.domain.consensus.proofs import InclusionProof, verify_decided
    from meshnode.store import decisions
    from meshnode.store.database import Database

    nodes = committee_of(tmp_path, 4)
    with reported(nodes):
        start_committee(nodes)
        values = [f"burst {i}" for i in range(12)]
        for i, value in enumerate(values):  # none waits for its decision
            nodes[i % 4].call("consensus_propose", {"value": value})
        wait_until(lambda: all(set(values) <= set(decided(n)) for n in nodes), 90, "all four to decide the burst")
        listings = [[(r["height"], r["index"], r["value"]) for r in n.call("consensus_decisions", {"limit": 100})]
                    for n in nodes]
        assert all(listing == listings[0] for listing in listings), listings
        heights = {h for h, _, _ in listings[0]}
        assert len(heights) < len(values), listings[0]  # batched
        for h in heights:
            assert sorted(i for g, i, _ in listings[0] if g == h) == list(range(sum(g == h for g, _, _ in listings[0])))
        committee = Committee.of({n.did: 1 for n in nodes})
        for n in nodes:
            assert n.stop() == 0
        db = Database(nodes[1].home / "data" / "meshnode.db", create=False)
        try:
            height, index = decisions.place_of(db, b"burst 5")
            block, round_, precommits = decisions.block_of(db, committee.id, height)
        finally:
            db.close()
        verify_decided(committee, b"burst 5", InclusionProof.of(height, round_, block, index), precommits)
