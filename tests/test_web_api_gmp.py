"""Goals and tasks over HTTP (meshnode/faces/web/api_gmp.py): the GMP service's commands through the
node's control layer, GMP's refusals passed through verbatim, bad input refused before anything
is signed."""

from __future__ import annotations

import pytest

from webharness import refused, web_node

from meshnode.store import Database
from meshnode.store.provenance import of


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("gmp")) as node:
        yield node


def everything(web) -> tuple:
    """What a refused request must leave as it was: every goal and task, with their versions."""
    goals = web.get("/api/goals")
    return goals, web.get("/api/tasks"), [web.get(f"/api/goals/{g['lineage']}") for g in goals]


def test_goal_and_task_for_self_through_to_done(web):
    goal = web.post("/api/goals", {"title": "Ship the bridge", "priority": 0.8, "criteria": ["it carries"],
                                   "tags": ["bridge"]})
    assert goal["status"] == "active" and goal["lineage"].startswith("did:")
    task = web.post("/api/tasks", {"goal": goal["lineage"], "title": "build the adapter", "check_every_s": 86400})
    tid = task["lineage"]
    assigned = web.post(f"/api/tasks/{tid}/assign", {"candidates": ["web"]})  # this node, by its name
    assert "offer" not in assigned  # offered to oneself: assigned at once, as `task assign --to self` does

    assert [g["title"] for g in web.get("/api/goals")] == ["Ship the bridge"]
    assert [g["lineage"] for g in web.get("/api/goals", mine="true", status="active")] == [goal["lineage"]]
    tree = web.get(f"/api/goals/{goal['lineage']}")
    assert tree["title"] == "Ship the bridge" and [t["title"] for t in tree["tasks"]] == ["build the adapter"]
    mine = web.get("/api/tasks", mine="true", goal=goal["lineage"])
    assert [t["lineage"] for t in mine] == [tid] and len(mine[0]["assigned_to"]) == 1

    progress = web.post(f"/api/tasks/{tid}/progress", {"progress": 0.5, "summary": "half", "check_in": True})
    assert progress["progress"] == 0.5
    assert web.get(f"/api/tasks/{tid}")["status"] == "in_progress"
    assert isinstance(web.get("/api/tasks/due", include_all="true"), list)
    done = web.post(f"/api/tasks/{tid}/done", {"summary": "works"})
    assert done["status"] == "completed"
    shown = web.get(f"/api/tasks/{tid}")
    assert shown["status"] == "completed" and shown["progress"] == 1.0
    assert [e["kind"] for e in shown["entries"]][:1] == ["progress"]

    # a refused transition: GMP's code and reason, verbatim, and nothing signed
    before = everything(web)
    again = refused(web.raw_post(f"/api/tasks/{tid}/done", {}), 409, "not_allowed")
    assert again == f"task {tid} is completed: only a task in progress is completed"
    assert refused(web.raw_post(f"/api/tasks/{tid}/progress", {"progress": 0.9}), 409,
                   "not_allowed") == f"task {tid} is completed: it is over"
    assert everything(web) == before

    # the result, and its review by the task's creator
    assert shown["result"]["summary"] == "works" and shown["review"] is None
    assert web.post(f"/api/tasks/{tid}/review", {"verdict": "accept"})["verdict"] == "accepted"
    assert web.get(f"/api/tasks/{tid}")["review"]["verdict"] == "accepted"


def test_bad_input_is_refused_and_changes_nothing(web):
    goal = web.post("/api/goals", {"title": "Second goal"})["lineage"]
    task = web.post("/api/tasks", {"goal": goal, "title": "a task"})["lineage"]
    before = everything(web)
    for path, body in [("/api/goals", {}),  # no title
                       ("/api/goals", {"title": 5}),
                       ("/api/goals", {"title": "x", "priority": 2}),
                       ("/api/goals", {"title": "x", "colour": "red"}),
                       ("/api/goals", {"title": "x", "tags": [1, 2]}),
                       ("/api/tasks", {"goal": goal}),
                       ("/api/tasks", {"goal": goal, "title": "t", "rule": "anyone"}),
                       (f"/api/tasks/{task}/progress", {"progress": "half"}),
                       (f"/api/tasks/{task}/progress", {"progress": 1.5}),
                       (f"/api/tasks/{task}/update", {"status": "finished"}),
                       (f"/api/tasks/{task}/assign", {}),  # none of candidates, interest, basis
                       (f"/api/tasks/{task}/assign", {"candidates": ["web"], "basis": "did:x"}),
                       (f"/api/tasks/{task}/done", {"id": "other"})]:  # a body key naming the path's
        refused(web.raw_post(path, body), 400, "bad_arguments")
    refused(web.raw_get("/api/goals", status="sleeping"), 400, "bad_arguments")
    refused(web.raw_get("/api/goals", mine="perhaps"), 400, "bad_arguments")
    # GMP's own checks, past the route's: an empty title is GMP's bad_args
    assert "title" in refused(web.raw_post("/api/goals", {"title": "   "}), 400, "bad_args")
    refused(web.raw_get("/api/goals/nosuchgoal"), 404, "unknown_goal")
    refused(web.raw_post("/api/tasks", {"goal": "nosuchgoal", "title": "t"}), 404, "unknown_goal")
    assert "nobody-known" in refused(web.raw_post(f"/api/tasks/{task}/assign", {"candidates": ["nobody-known"]}),
                                     400, "bad_id")  # as `task assign --to` says it
    assert everything(web) == before


def test_goal_update_and_cancel(web):
    goal = web.post("/api/goals", {"title": "Third goal"})["lineage"]
    updated = web.post(f"/api/goals/{goal}/update", {"status": "paused", "title": "Third goal, paused"})
    assert updated["status"] == "paused"
    assert web.get(f"/api/goals/{goal}")["title"] == "Third goal, paused"
    web.post(f"/api/goals/{goal}/cancel", {"reason": "not needed"})
    assert web.get(f"/api/goals/{goal}")["status"] == "cancelled"
    before = everything(web)
    closed = web.raw_post("/api/tasks", {"goal": goal, "title": "late"})
    body = closed.json()  # GMP's code and reason as they are (its HTTP status: errors.status_for)
    assert closed.status_code >= 400 and body["code"] == "goal_closed" and "takes no new tasks" in body["reason"]
    assert everything(web) == before


def test_what_the_web_writes_records_the_person_through_the_web(web):
    goal = web.post("/api/goals", {"title": "Fourth goal"})
    task = web.post("/api/tasks", {"goal": goal["lineage"], "title": "a web task"})
    db = Database(web.home / "data" / "meshnode.db")
    try:
        for did in (goal["did"], task["did"]):
            row = of(db.conn, did)
            assert (row["kind"], row["via"]) == ("person", "web")
    finally:
        db.close()
