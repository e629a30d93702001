"""The agent's GMP commands, through extraction and the executor on two agents' databases: the
creator's agent adds and delegates a task, the other's accepts (its node assigns it), reports
progress and completes; context 3 shows the task with its assignee's name and due state, and
an offer waiting for an answer."""

from __future__ import annotations

import json

import pytest

from meshnode.engines.cognition import contexts, executor
from meshnode.engines.cognition.commands import extract
from meshnode.records.gmp import service
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database
from meshnode.store.views_cogsync import load_stored

T = 1_800_000_000_000
A, B = NodeKey(bytes([7]) * 32), NodeKey(bytes([8]) * 32)


@pytest.fixture
def dbs(tmp_path):
    out = {A.did: Database(tmp_path / "a.db"), B.did: Database(tmp_path / "b.db")}
    for db, other, name in ((out[A.did], B, "bea"), (out[B.did], A, "ann")):
        with db.transaction() as conn:
            conn.execute("INSERT INTO agent_peers (id, name) VALUES (?, ?)", (other.did, name))
    yield out
    for db in out.values():
        db.close()


def run(db, key, now, kind: str, args: dict):
    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    extraction = extract(answer)
    assert not extraction.errors, extraction.errors
    result = executor.run(db, key, now, extraction.commands[0])
    assert result["status"] == "ok", result
    assert "push" not in result["result"]
    return result["result"]


def copy_all(source: Database, target: Database) -> None:
    """What sync would bring: every GMP container of ``source``, oldest first (admission orders the rest)."""
    dids = [r[0] for r in source.conn.execute("SELECT did FROM containers WHERE class IN ('goal', 'task',"
                                              " 'workflow_entry') ORDER BY timestamp_ms, did")]
    for did in dids:
        target.put_container(load_stored(source.conn, did), received_at_ms=T)


def test_the_agents_delegate_accept_report_and_complete(dbs):
    a, b = dbs[A.did], dbs[B.did]
    goal = run(a, A, T, "goal_add", {"title": "map the river", "participants": [B.did]})
    task = run(a, A, T + 1, "task_add", {"title": "survey the ford", "goal": goal["lineage"], "tags": ["survey"]})
    run(a, A, T + 2, "task_delegate", {"task": task["task"], "to": [B.did]})
    copy_all(a, b)
    seen = contexts.goals_and_tasks(b, B.did, T + 3)
    assert seen["offers_to_you"][0]["task"] == task["task"]
    listed = run(b, B, T + 3, "task_list", {})
    assert [t["title"] for t in listed] == ["survey the ford"]
    accepted = run(b, B, T + 3, "task_accept", {"task": task["task"]})
    copy_all(b, a)
    assigned = service.on_admitted(a, A, T + 4, [accepted["did"]])
    assert assigned["published"]
    copy_all(a, b)
    mine = contexts.goals_and_tasks(b, B.did, T + 5)
    assert mine["tasks"][0]["you_hold_it"] is True and mine["tasks"][0]["assignees"] == [B.did]
    assert "offers_to_you" not in mine  # answered
    theirs = contexts.goals_and_tasks(a, A.did, T + 5)
    assert theirs["tasks"][0]["assignees"] == ["bea"] and theirs["goals"][0]["title"] == "map the river"
    run(b, B, T + 6, "task_progress", {"task": task["task"], "progress": 0.5, "check_in": True})
    run(b, B, T + 7, "task_done", {"task": task["task"], "summary": "the ford is knee deep"})
    copy_all(b, a)
    row = a.conn.execute("SELECT status, progress FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone()
    assert row == ("completed", 1.0)
    assert contexts.goals_and_tasks(a, A.did, T + 8)["tasks"] == []  # nothing left to look after


def test_context_3_shows_what_needs_a_check(dbs):
    a = dbs[A.did]
    goal = run(a, A, T, "goal_add", {"title": "keep the lights on"})
    run(a, A, T + 1, "task_add", {"title": "check the fuses", "goal": goal["lineage"]})
    run(a, A, T + 2, "task_add", {"title": "a local reminder"})  # no goal: local, never signed
    seen = contexts.goals_and_tasks(a, A.did, T + 3)
    assert [(t["title"], t["assignees"], t["due"]) for t in seen["tasks"]] == [("check the fuses", "(none)",
                                                                                 "unassigned")]
    assert seen["local_tasks"] == 1
    assert a.conn.execute("SELECT count(*) FROM containers WHERE class = 'task'").fetchone()[0] == 1
    text = contexts.build(a, now_ms=T + 3, tick=1, recent_k=3, mode="auto", llm_id="m", own_did=A.did)[1]["content"]
    assert "check the fuses" in text and "unassigned" in text


def test_what_the_agent_signs_waits_for_the_cycle_to_push_it(dbs):
    from meshnode.engines.cognition.handlers import goals

    a = dbs[A.did]
    goals.take_written(A.did), goals.take_written(B.did)  # earlier tests of this process
    goal = run(a, A, T, "goal_add", {"title": "paint the barn", "participants": [B.did]})
    written = goals.take_written(A.did)
    assert [(name, result["push"]) for name, result in written] == [("goal_add", [{"to": B.did, "dids": [goal["did"]]}])]
    assert "push" not in goal  # what the agent reads back
    assert goals.take_written(A.did) == [] and goals.take_written(B.did) == []


async def test_the_cycle_follows_up_what_the_agent_wrote_through_the_gmp_action(dbs):
    """Out of the store's writer, the cycle hands each GMP write of the agent to ``gmp.follow``: the
    node's GMP service pushes it and reacts to it, waiting for nobody."""
    from types import SimpleNamespace

    from meshnode.engines.cognition.cycle import Cycle
    from meshnode.engines.cognition.handlers import goals

    class Gmp:
        def __init__(self):
            self.followed = []

        async def published(self, name, result, wait_s=None):
            self.followed.append((name, result["did"], wait_s))
            return {"done": [], "failed": [], "later": []}

    gmp = Gmp()
    goals.take_written(A.did)  # earlier tests of this process
    goal = run(dbs[A.did], A, T, "goal_add", {"title": "paint the barn", "participants": [B.did]})
    cycle = SimpleNamespace(key=A, store=None, clock=lambda: T, mesh=SimpleNamespace(gmp=gmp))
    await Cycle._push_gmp(cycle)
    assert gmp.followed == [("goal_add", goal["did"], 0)]
    await Cycle._push_gmp(cycle)
    assert len(gmp.followed) == 1  # followed once
