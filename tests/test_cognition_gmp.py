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
    seen = contexts.waiting(b, B.did, T + 3)
    assert seen["offers_to_answer"][0]["task"] == task["task"]
    listed = run(b, B, T + 3, "task_list", {})
    assert [t["title"] for t in listed] == ["survey the ford"]
    accepted = run(b, B, T + 3, "task_accept", {"task": task["task"]})
    copy_all(b, a)
    assigned = service.on_admitted(a, A, T + 4, [accepted["did"]])
    assert assigned["published"]
    copy_all(a, b)
    mine = contexts.goals_and_tasks(b, B.did, T + 5)
    assert mine["tasks"][0]["you_hold_it"] is True and mine["tasks"][0]["assignees"] == [B.did]
    assert "offers_to_answer" not in contexts.waiting(b, B.did, T + 5)  # answered
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


def _fail(db, key, now, kind: str, args: dict) -> dict:
    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    extraction = extract(answer)
    assert not extraction.errors, extraction.errors
    result = executor.run(db, key, now, extraction.commands[0])
    assert result["status"] == "error", result
    return result


def _offered(a, b):
    """A's agent makes a goal with B and offers B a task; B holds it all (a sync)."""
    goal = run(a, A, T, "goal_add", {"title": "map the river", "participants": [B.did],
                                     "description": "a map good enough to ford by night",
                                     "criteria": ["every ford marked", "depths in metres"]})
    task = run(a, A, T + 1, "task_add", {"title": "survey the ford", "goal": goal["goal"],
                                         "description": "walk it at low water"})
    offer = run(a, A, T + 2, "task_delegate", {"task": task["task"], "to": [B.did], "expires_s": 3600})
    copy_all(a, b)
    return goal, task, offer


def test_an_offer_waits_in_every_prompt_until_answered_or_expired_receipt_or_not(dbs):
    """Issue 37: the candidate's node signs a receipt on arrival; that is no answer, so the offer
    stays in the prompt at every tick (not only in the wake that brought it) until it expires."""
    a, b = dbs[A.did], dbs[B.did]
    goal, task, offer = _offered(a, b)
    receipt = service.on_admitted(b, B, T + 3, [offer["did"]])
    assert receipt["published"]  # B's node has signed its receipt for the offer
    for now in (T + 3, T + 600_000, T + 3_500_000):  # ticks long after the wake
        waiting = contexts.waiting(b, B.did, now)["offers_to_answer"]
        assert [(o["task"], o["title"], o["goal"], o["goal_title"]) for o in waiting] \
            == [(task["task"], "survey the ford", goal["goal"], "map the river")]
        assert waiting[0]["from"] == f"ann ({A.did})" and waiting[0]["offer"] == offer["did"][21:31]
        assert waiting[0]["description"] == "walk it at low water"
    text = contexts.build(b, now_ms=T + 600_000, tick=9, recent_k=3, mode="auto", llm_id="m",
                          own_did=B.did)[1]["content"]
    assert "Waiting for you" in text and "survey the ford" in text
    assert "a map good enough to ford by night" in text and "every ford marked" in text  # the goal's
    assert "offers_to_answer" not in contexts.waiting(b, B.did, T + 2 + 3_600_000)  # expired


def test_the_agent_runs_the_whole_cycle_by_the_ids_it_is_shown(dbs):
    a, b = dbs[A.did], dbs[B.did]
    goal, task, _ = _offered(a, b)
    # the goal by its short id: read in full, updated (no row number needed)
    seen = run(b, B, T + 3, "goal_read", {"goal": goal["goal"]})
    assert seen["description"] == "a map good enough to ford by night"
    assert seen["success_criteria"] == ["every ford marked", "depths in metres"]
    assert [t["title"] for t in seen["tasks"]] == ["survey the ford"]
    assert run(a, A, T + 3, "goal_update", {"goal": goal["goal"], "priority": 0.9})["lineage"] == goal["lineage"]
    carol = NodeKey(bytes([9]) * 32).did
    run(a, A, T + 3, "goal_update", {"goal": goal["goal"], "add_participants": [carol]})
    assert run(a, A, T + 3, "goal_read", {"goal": goal["lineage"]})["participants"] == [A.did, f"bea ({B.did})", carol]
    sub = run(a, A, T + 3, "goal_add", {"title": "the west bank", "parent": goal["goal"]})
    assert a.conn.execute("SELECT parent_goal FROM goals WHERE lineage = ?", (sub["lineage"],)).fetchone() \
        == (goal["lineage"],)
    dep = run(a, A, T + 3, "task_add", {"title": "draw the map", "goal": goal["goal"], "depends": [task["task"]],
                                        "grace_s": 7200, "rule": "cogconsensus"})
    shown = run(a, A, T + 3, "task_read", {"task": dep["task"]})
    assert shown["depends_on"] == [task["task"]] and shown["delegation_rule"] == "cogconsensus"
    # B accepts; A's node assigns; B works and finishes
    accepted = run(b, B, T + 4, "task_accept", {"task": task["task"]})
    copy_all(b, a)
    service.on_admitted(a, A, T + 5, [accepted["did"]])
    copy_all(a, b)
    held = contexts.waiting(b, B.did, T + 6)["tasks_you_hold"]
    assert [(h["task"], h["status"]) for h in held] == [(task["task"], "pending")]
    run(b, B, T + 7, "task_progress", {"task": task["task"], "progress": 0.5, "summary": "half the bank done",
                                       "check_in": True})
    run(b, B, T + 8, "task_done", {"task": task["task"], "summary": "knee deep at low water, 40 m wide"})
    copy_all(b, a)
    # A sees the result, with what B wrote, every tick until it reviews it
    results = contexts.waiting(a, A.did, T + 9)["results_to_review"]
    assert [(r["task"], r["status"], r["result"], r["progress_notes"]) for r in results] \
        == [(task["task"], "completed", "knee deep at low water, 40 m wide", ["half the bank done"])]
    listed = run(a, A, T + 9, "task_list", {"goal": goal["goal"]})
    assert {t["title"]: t.get("result") for t in listed} == {"survey the ford": "knee deep at low water, 40 m wide",
                                                             "draw the map": None}
    read = run(a, A, T + 9, "task_read", {"task": task["task"]})
    assert read["result"]["summary"] == "knee deep at low water, 40 m wide"
    assert read["review"].startswith("not reviewed")
    assert [h["who"] for h in read["holders"]] == [f"bea ({B.did})"]
    assert [e["summary"] for e in read["entries"] if e["kind"] == "progress"] == ["half the bank done"]
    # rejected with a reason: reopened, B holds it again and reads why
    rejected = run(a, A, T + 10, "task_review", {"task": task["task"], "verdict": "reject",
                                                 "reason": "give the depth in metres"})
    assert rejected["status"] == "pending" and "results_to_review" not in contexts.waiting(a, A.did, T + 11)
    copy_all(a, b)
    again = run(b, B, T + 11, "task_read", {"task": task["task"]})
    assert again["status"] == "pending" and again["notes"] == "result rejected: give the depth in metres"
    assert [h["task"] for h in contexts.waiting(b, B.did, T + 11)["tasks_you_hold"]] == [task["task"]]
    run(b, B, T + 12, "task_done", {"task": task["task"], "summary": "0.6 m at low water"})
    copy_all(b, a)
    assert contexts.waiting(a, A.did, T + 13)["results_to_review"][0]["result"] == "0.6 m at low water"
    run(a, A, T + 13, "task_review", {"task": task["task"], "verdict": "accept"})
    assert "results_to_review" not in contexts.waiting(a, A.did, T + 14)
    assert _fail(a, A, T + 14, "task_review", {"task": dep["task"], "verdict": "accept"})["code"] == "not_finished"
    # the goal is closed by its short id
    run(a, A, T + 15, "task_update", {"task": dep["task"], "status": "abandoned"})
    assert run(a, A, T + 16, "goal_update", {"goal": goal["goal"], "status": "completed"})["lineage"] \
        == goal["lineage"]


def test_release_reassign_and_nominate_from_the_agent(dbs):
    a, b = dbs[A.did], dbs[B.did]
    goal, task, _ = _offered(a, b)
    accepted = run(b, B, T + 4, "task_accept", {"task": task["task"]})
    copy_all(b, a)
    service.on_admitted(a, A, T + 5, [accepted["did"]])
    copy_all(a, b)
    run(b, B, T + 6, "task_release", {"task": task["task"]})
    copy_all(b, a)
    assert run(a, A, T + 7, "task_read", {"task": task["task"]})["assignees"] == []
    assert [t["task"] for t in run(a, A, T + 7, "task_due", {"all": True})] == [task["task"]]
    # a finished task rejected with reassign is taken from its holder
    run(a, A, T + 8, "task_delegate", {"task": task["task"], "to": [A.did]})  # the creator takes it itself
    run(a, A, T + 9, "task_done", {"task": task["task"]})
    assert _fail(a, A, T + 10, "task_review", {"task": task["task"], "verdict": "reject"})["code"] == "bad_args"
    taken = run(a, A, T + 10, "task_review", {"task": task["task"], "verdict": "reject", "reason": "redo it",
                                              "reassign": True})
    assert taken["holders"] == [] and run(a, A, T + 11, "task_read", {"task": task["task"]})["assignees"] == []
    contested = run(a, A, T + 12, "task_add", {"title": "pick a guide", "goal": goal["goal"], "rule": "cogconsensus"})
    copy_all(a, b)
    nominated = run(b, B, T + 13, "task_nominate", {"task": contested["task"], "candidate": A.did})
    assert nominated["candidate"] == A.did


def test_local_rows_keep_their_numbers_and_a_shared_one_is_not_deleted(dbs):
    a = dbs[A.did]
    with a.transaction() as conn:
        local = conn.execute("INSERT INTO goals (name, status, priority) VALUES ('tidy up', 'active', 0.5)").lastrowid
    assert run(a, A, T, "goal_read", {"goal": local})["name"] == "tidy up"
    assert run(a, A, T, "goal_update", {"goal": str(local), "status": "paused"})["status"] == "paused"
    shared = run(a, A, T, "goal_add", {"title": "map the river"})
    assert _fail(a, A, T + 1, "goal_delete", {"goal": shared["goal"]})["code"] == "refused"
    assert _fail(a, A, T + 1, "goal_read", {"goal": "zzzzzzzz"})["code"] == "unknown_goal"
    assert run(a, A, T + 1, "goal_delete", {"id": local})["deleted"] == local


async def test_the_agent_offers_a_task_by_interest_through_the_assign_action(tmp_path):
    """``task_delegate`` with ``interest`` needs the mesh's lookup: the cycle runs it after the
    answer (``mesh_commands``) as the action ``task_assign`` the CLI's ``--interest`` runs."""
    from types import SimpleNamespace

    from meshnode.engines.cognition import mesh_commands
    from meshnode.engines.cognition.commands import Command
    from meshnode.engines.cognition.tick_store import _deferred
    from meshnode.store.service import Store

    class Gmp:
        settings = SimpleNamespace(offer_s=1800.0)

        def __init__(self):
            self.asked, self.followed = [], []

        async def candidates(self, lineage, tags, exclude=()):
            self.asked.append((lineage, tags))
            return [B.did]

        async def published(self, name, result, wait_s=None):
            self.followed.append(name)
            return {}

    store = await Store.open(tmp_path / "a.db")
    try:
        goal = await store.write(lambda db: run(db, A, T, "goal_add", {"title": "map the river"}))
        task = await store.write(lambda db: run(db, A, T + 1, "task_add", {"title": "survey", "goal": goal["goal"]}))
        cmd = Command("c1", "task_delegate", {"task": task["task"], "interest": "survey", "candidates": 2})
        assert _deferred(cmd) and not _deferred(Command("c2", "task_delegate", {"task": "x", "to": [B.did]}))
        gmp = Gmp()
        result = await mesh_commands.run(SimpleNamespace(gmp=gmp), store, A, T + 2, cmd)
        assert result["status"] == "ok", result
        assert result["result"]["candidates"] == [B.did] and gmp.asked == [(task["lineage"], ["survey"])]
        assert gmp.followed == ["task_offer"]
        both = Command("c3", "task_delegate", {"task": task["task"], "interest": "survey", "to": [B.did]})
        assert (await mesh_commands.run(SimpleNamespace(gmp=gmp), store, A, T + 3, both))["status"] == "error"
    finally:
        await store.aclose()
