"""Delegation that runs by itself, across real node processes (issue 37; gmp.md sections 6.3 and 8):
a task contested by CogConsensus offered by its creator's node to the nominee the votes approve once
the voting period is over; a task contested by MeshConsensus offered to the nominee the committee's
first decision binds (every other assignment refused); a task whose holder is overdue and whose
creator is gone taken over by a participant's node, the steward, which offers it again and tells
its person.

One mesh of four nodes serves the module (each a MeshConsensus validator; the steward story, which
kills the creator, runs last). Timers are small: a GMP check every 0.5 s, votes counted after 1 s,
consensus rounds of a few hundred ms."""

from __future__ import annotations

import time

import pytest

from meshharness import Node, wait_until
from test_mesh_consensus import FAST_CONSENSUS, ROUNDS_ON_REQUEST
from test_mesh_gmp import GMP_ENV, STEP, holds_all, offer_to, show

from meshnode.domain.gmp import contest
from meshnode.net.control import ControlError

ENV = {**GMP_ENV, **FAST_CONSENSUS, **ROUNDS_ON_REQUEST, "MESHNODE_GMP_VOTE_SECONDS": "1"}
GRACE_S = 600  # the smallest check_grace_s a task may have


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    root = tmp_path_factory.mktemp("delegation")
    nodes = [Node(root, name, env=ENV) for name in ("alice", "bob", "carol", "dave")]
    committee = ",".join(n.did for n in nodes)
    for n in nodes:
        n.env["MESHNODE_CONSENSUS_COMMITTEE"] = committee
    try:
        nodes[0].start()
        for n in nodes[1:]:
            n.set_bootstrap(nodes[0])
            n.start()
        wait_until(lambda: all(len(n.try_call("peers") or []) >= 3 for n in nodes), STEP, "the four nodes to meet")
        yield nodes
    finally:
        for n in nodes:
            n.kill()


def _report(nodes) -> None:
    for n in nodes:
        gmp = [m for m in (n.try_call("metrics") or []) if m["name"].startswith(("gmp_", "consensus_gmp"))]
        print(f"--- {n.name} ({n.did}) gmp metrics: {gmp}")
        print("\n".join(n.drain(timeout=0.2)[-40:]))


def _goal(creator: Node, others: list[Node], title: str) -> str:
    goal = creator.call("goal_add", {"title": title, "participants": [n.did for n in others]})["lineage"]
    wait_until(lambda: all(n.try_call("goal_show", {"goal": goal}) for n in others), STEP,
               "the participants to hold the goal")
    return goal


def _holds(node: Node, task: str, did: str) -> bool:
    return (show(node, task) or {}).get("assigned_to") == [did]


def test_cogconsensus_offers_the_task_to_the_approved_nominee_after_the_vote(mesh):
    alice, bob, carol, dave = mesh
    try:
        goal = _goal(alice, [bob, carol, dave], "Choose by vote")
        task = alice.call("task_add", {"goal": goal, "title": "contested", "rule": "cogconsensus"})["lineage"]
        wait_until(lambda: show(carol, task) and show(dave, task), STEP, "the participants to hold the task")
        turned_down = carol.call("task_nominate", {"task": task, "candidate": dave.did})["did"]
        chosen = dave.call("task_nominate", {"task": task, "candidate": bob.did})["did"]
        for voter in (bob, carol, dave):  # (a nomination is pushed to every participant at once)
            wait_until(lambda: holds_all(voter, {turned_down, chosen}), STEP, f"{voter.name} to hold both nominations")
            voter.call("consensus_vote", {"target": turned_down, "value": -1})
            voter.call("consensus_vote", {"target": chosen, "value": 1})
        # nobody offers: once the votes reach alice (sync) and vote_seconds are over, her node does
        wait_until(lambda: offer_to(bob, task), STEP, "bob to be offered the task alice's node chose for him")
        offer = next(e for e in show(alice, task)["entries"] if e["kind"] == "delegation")
        assert offer["candidates"] == [bob.did] and offer["signer"] == alice.did, offer
        bob.call("task_accept", {"task": task})
        wait_until(lambda: _holds(bob, task, bob.did) and _holds(carol, task, bob.did), STEP,
                   "bob to hold the task, and carol to admit the version (its basis checked there too)")
        assert not [e for e in show(alice, task)["entries"] if e["kind"] == "delegation" and dave.did in e["candidates"]]
    except BaseException:
        _report(mesh)
        raise


def test_meshconsensus_binds_the_first_decision_and_the_delegator_offers_it(mesh):
    alice, bob, carol, dave = mesh
    try:
        goal = _goal(alice, [bob, carol, dave], "Choose by committee")
        task = alice.call("task_add", {"goal": goal, "title": "committee", "rule": "meshconsensus"})["lineage"]
        wait_until(lambda: show(carol, task), STEP, "carol to hold the task")
        carol.call("task_nominate", {"task": task, "candidate": dave.did})
        # the validators' nodes request the value, the committee decides, alice's node offers
        wait_until(lambda: offer_to(dave, task), STEP, "dave to be offered the task the committee bound to him")
        decided = [d for d in alice.call("consensus_decisions", {}) if "gmp_delegation" in str(d)]
        assert len(decided) == 1, decided
        with pytest.raises(ControlError) as other:  # the creator cannot give it to anyone else
            alice.call("task_assign", {"task": task, "candidates": [bob.did]})
        assert other.value.code == "needs_decision", other.value
        dave.call("task_accept", {"task": task})
        wait_until(lambda: all(_holds(n, task, dave.did) for n in mesh), STEP,
                   "every node to admit the version assigning dave (each checks the commit)")
        shown = show(bob, task)
        offers = [e for e in shown["entries"] if e["kind"] == "delegation" and e["signer"] == alice.did]
        assert [o["candidates"] for o in offers] == [[dave.did]]
    except BaseException:
        _report(mesh)
        raise


def test_a_steward_takes_over_an_overdue_task_whose_creator_is_gone(mesh):
    """Runs last: it kills alice, the creator."""
    alice, bob, carol, dave = mesh
    try:
        goal = _goal(alice, [bob, carol, dave], "Keep going without me")
        task = alice.call("task_add", {"goal": goal, "title": "watched", "grace_s": GRACE_S})["lineage"]
        alice.call("task_assign", {"task": task, "candidates": [bob.did]})
        wait_until(lambda: offer_to(bob, task), STEP, "bob to get the offer")
        bob.call("task_accept", {"task": task})
        wait_until(lambda: all(_holds(n, task, bob.did) for n in (bob, carol, dave)), STEP,
                   "everyone to see bob hold the task")
        alice.kill()  # the creator is gone: only a steward can take the task back now
        # bob said he would check in 200 s ago (past the 600 s grace): the first steward's time has
        # come (overdue + 150 s), the second's has not (overdue + 300 s)
        now = int(time.time() * 1000)
        v = bob.call("task_update", {"task": task, "next_check_ms": now - (GRACE_S + 200) * 1000})["did"]
        first, second = contest.stewards(task, v, [alice.did, bob.did, carol.did, dave.did], [bob.did], alice.did)
        steward, other = {n.did: n for n in mesh}[first], {n.did: n for n in mesh}[second]
        taken = wait_until(lambda: (s := show(other, task)) and s["reason"] == "reassigned_overdue" and s, STEP,
                           f"{steward.name}, the first steward, to take the task over")
        assert taken["author_did"] == steward.did and taken["assigned_to"] == [], taken
        assert [(h["assignee"], h["ended"], h["ended_by"]) for h in taken["holders"]] == [
            (bob.did, "reassigned_overdue", steward.did)]
        notices = [i for i in steward.call("inbox", {})["items"] if i["kind"] == "notice"]
        assert any("steward" in i["summary"] and "watched" in i["summary"] for i in notices), notices
        wait_until(lambda: any("steward: took task" in line for line in steward.drain(timeout=0.2)), STEP,
                   f"{steward.name}'s log to say it took the task over")
        # the steward offers it again (never to bob, whom it removed); the first to accept gets it
        wait_until(lambda: offer_to(other, task), STEP, f"{other.name} to be offered the task by the steward")
        other.call("task_accept", {"task": task})
        wait_until(lambda: all(_holds(n, task, other.did) for n in (bob, carol, dave)), STEP,
                   f"everyone to see {other.name} hold the task the steward assigned")
        offers = [e for e in show(other, task)["entries"] if e["kind"] == "delegation" and e["signer"] == steward.did]
        assert offers and all(bob.did not in o["candidates"] for o in offers), offers
    except BaseException:
        _report(mesh)
        raise
