"""What is pushed, not synced, across real node processes (issue 35, defects 5 and 6). A GMP
participant that neither created nor holds a task sees each of its steps as it is made (a 40 % step, pushed, not
carried by the next sync), and a dead holder's task is offered to the goal's participants though
no peer announces its tags. And a friends note reaches a friend who is online at once, pushed, as
a person expects of a message (field run of issue 35: it waited for the next sync, up to 30 s).

Sync runs only every 10 minutes here, so whatever arrives within the test came by push. The
three nodes are shared by the tests of this file; the last one kills bob."""

from __future__ import annotations

import pytest

from meshharness import Node, report, wait_until
from test_mesh_gmp import GMP_ENV, STEP, offer_to, show

NO_SYNC = {**GMP_ENV, "MESHNODE_NET_SYNC_SECONDS": "600"}  # sync cannot be what carries a step


@pytest.fixture(scope="module")
def trio_nodes(tmp_path_factory):
    root = tmp_path_factory.mktemp("participants")
    a, b, c = (Node(root, name, env=NO_SYNC) for name in ("alice", "bob", "carol"))
    nodes = [a, b, c]
    try:
        a.start()
        for n in (b, c):
            n.set_bootstrap(a)
            n.start()
        wait_until(lambda: {p["did"] for p in a.call("peers", {}) if p.get("liveness") == "ok"} >= {b.did, c.did},
                   STEP, "alice to hear bob and carol")
        yield a, b, c
    except BaseException:
        report(nodes)
        raise
    finally:
        for n in nodes:
            n.kill()


def held_by(goal_participants: list[str], title: str, a: Node, b: Node) -> str:
    """A goal of ``a`` with ``goal_participants``, one task offered to ``b`` and held by it; its lineage."""
    goal = a.call("goal_add", {"title": title, "participants": goal_participants})["lineage"]
    task = a.call("task_add", {"goal": goal, "title": f"{title}: the work", "tags": ["nobody-announces-this"]})
    a.call("task_assign", {"task": task["lineage"], "candidates": [b.did]})
    wait_until(lambda: offer_to(b, task["lineage"]), STEP, "bob to get the offer")
    b.call("task_accept", {"task": task["lineage"]})
    wait_until(lambda: (show(b, task["lineage"]) or {}).get("assigned_to") == [b.did], STEP, "bob to hold the task")
    return task["lineage"]


def test_a_participant_sees_a_40_percent_step_pushed_as_it_is_made(trio_nodes):
    a, b, c = trio_nodes
    task = held_by([c.did], "Ship the bridge", a, b)
    step = b.call("task_progress", {"task": task, "progress": 0.4, "summary": "the adapter compiles"})["did"]
    seen = wait_until(lambda: (s := show(c, task)) and s["progress"] == 0.4 and s, STEP,
                      "carol (participant) to see the 40 % step")
    assert [(e["did"], e["counted"]) for e in seen["entries"] if e["kind"] == "progress"] == [(step, True)]
    later = b.call("task_progress", {"task": task, "progress": 0.7})["did"]
    seen = wait_until(lambda: (s := show(c, task)) and s["progress"] == 0.7 and s, STEP,
                      "carol to see the 70 % step")
    assert [e["did"] for e in seen["entries"] if e["kind"] == "progress"] == [step, later]  # each step kept


def test_a_friends_note_is_pushed_to_the_friends_online_and_to_no_one_else(trio_nodes):
    a, b, c = trio_nodes
    a.call("friend", {"did": c.did})
    note = a.call("note_add", {"text": "dinner at eight", "audience": "friends"})["did"]
    wait_until(lambda: any(r["container_did"] == note for r in c.call("notes", {"limit": 50})), STEP,
               "carol (a friend, online) to get the note by push")
    assert not any(r["container_did"] == note for r in b.call("notes", {"limit": 50}))  # bob is no friend


def test_an_assignee_not_participant_gets_the_creators_own_versions_and_the_goals_closing_pushed(trio_nodes):
    """Issue 37: bob holds a task of a goal whose only participant is carol. The creator's own task
    versions and the goal's closing reach him at once (with sync off), not at the next sync."""
    a, b, c = trio_nodes
    task = held_by([c.did], "Paint the hall", a, b)
    goal = show(a, task)["goal_lineage"]
    other = a.call("task_add", {"goal": goal, "title": "buy the paint"})["lineage"]
    a.call("task_update", {"task": other, "title": "buy the red paint"})
    wait_until(lambda: (show(b, other) or {}).get("title") == "buy the red paint", STEP,
               "bob to get alice's own versions of a task he does not hold")
    a.call("goal_update", {"goal": goal, "status": "completed"})
    wait_until(lambda: b.call("goal_show", {"goal": goal})["status"] == "completed", STEP,
               "bob to get the goal's closing")
    wait_until(lambda: show(b, other)["status"] == "abandoned", STEP, "bob to see its open tasks abandoned")


def test_a_dead_holders_task_is_offered_to_a_participant_without_any_interest(trio_nodes):
    a, b, c = trio_nodes
    task = held_by([c.did], "Write the manual", a, b)
    b.call("task_update", {"task": task, "status": "in_progress"})
    wait_until(lambda: show(a, task)["status"] == "in_progress", STEP, "alice to see bob start")
    b.kill()
    offer = wait_until(lambda: offer_to(c, task), STEP, "carol (participant) to be offered the task once bob is dead")
    taken = show(a, task)
    assert taken["reason"] == "reassigned_dead" and taken["assigned_to"] == [], taken
    assert [e["candidates"] for e in taken["entries"] if e["did"] == offer] == [[c.did]]
    c.call("task_accept", {"task": task})
    wait_until(lambda: (show(c, task) or {}).get("assigned_to") == [c.did], STEP, "carol to hold the task")
