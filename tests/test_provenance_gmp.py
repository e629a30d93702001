"""Who asked for goals, tasks and CogConsensus votes and results (app.actions.gmp and consensus,
store.provenance): every container an action writes is recorded with its actor, in the same
write, the containers it writes on its way (the tasks a cancelled goal abandons) included; each
face (CLI, agent) records its own. The web's and A2A's are in test_web_api_gmp and test_a2a."""

from __future__ import annotations

import json

import pytest
from test_cli import db_path

from meshnode.app import actor
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.engines.cognition import executor
from meshnode.engines.cognition.commands import extract
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database
from meshnode.store.provenance import of
from meshnode.store.service import Store

KEY = NodeKey(bytes([7]) * 32)
T = 1_800_000_000_000


def asked(conn, did: str) -> tuple:
    row = of(conn, did)
    return (row["kind"], row["via"], row["id"]) if row else None


def unrecorded(conn) -> list[str]:
    """Containers of this node's that no provenance row names."""
    return [r[0] for r in conn.execute("SELECT c.did FROM containers c LEFT JOIN provenance p ON p.container_did = c.did"
                                       " WHERE p.container_did IS NULL")]


async def test_every_gmp_and_vote_container_an_action_writes_records_who_asked(tmp_path):
    web, mcp, party = actor.person("web"), actor.person("mcp"), actor.a2a("known:friend", "friend")
    async with await Store.open(tmp_path / "p.db") as store:
        app = App(store, KEY, clock=lambda: T)
        goal = await dispatch(app, web, "goal_add", {"title": "ship the bridge"})
        task = await dispatch(app, party, "task_add", {"goal": goal["lineage"], "title": "the adapter"})
        taken = await dispatch(app, actor.AGENT, "task_assign", {"task": task["lineage"], "candidates": [KEY.did]})
        progress = await dispatch(app, actor.AGENT_TASK, "task_progress", {"task": task["lineage"], "progress": 0.5,
                                                                          "check_in": True})
        cancelled = await dispatch(app, mcp, "goal_cancel", {"goal": goal["lineage"], "reason": "no river"})
        vote = await dispatch(app, actor.person("cli"), "consensus_vote", {"target": goal["did"], "value": 1})
        result = await dispatch(app, web, "consensus_result", {"target": goal["did"], "min_voters": 1})

        def check(db):
            assert asked(db.conn, goal["did"]) == ("person", "web", None)
            assert asked(db.conn, task["did"]) == ("a2a", "a2a", "known:friend")
            assert asked(db.conn, taken["did"]) == ("agent", "cycle", None)
            assert asked(db.conn, progress["did"]) == asked(db.conn, progress["version"]) == ("agent", "task", None)
            assert asked(db.conn, cancelled["did"]) == asked(db.conn, cancelled["reflection"]) == ("person", "mcp", None)
            abandoned = db.conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (task["lineage"],))
            assert asked(db.conn, abandoned.fetchone()[0]) == ("person", "mcp", None)  # the task the cancel closed
            assert asked(db.conn, vote["did"]) == ("person", "cli", None)
            assert asked(db.conn, result["did"]) == ("person", "web", None)
            assert unrecorded(db.conn) == []

        await store.read(check)


async def test_a_write_refused_records_nothing(tmp_path):
    async with await Store.open(tmp_path / "p.db") as store:
        app = App(store, KEY, clock=lambda: T)
        goal = await dispatch(app, actor.person("web"), "goal_add", {"title": "g"})
        with pytest.raises(MeshnodeError):  # a goal is no task: refused before anything is signed
            await dispatch(app, actor.person("web"), "task_done", {"task": goal["lineage"]})
        count = await store.read(lambda db: db.conn.execute("SELECT count(*) FROM provenance").fetchone()[0])
        assert count == 1


def test_the_cli_records_the_person_at_the_cli(run_cli, home):
    goal = run_cli("--home", home, "goal", "add", "Ship the bridge")
    assert goal.returncode == 0, goal.stderr
    goal = goal.stdout.strip()
    vote = run_cli("--home", home, "consensus", "vote", goal, "--value", "1")
    assert vote.returncode == 0, vote.stderr
    db = Database(db_path(home), create=False)
    try:
        assert asked(db.conn, goal) == asked(db.conn, vote.stdout.strip()) == ("person", "cli", None)
    finally:
        db.close()


def _agent(db, kind: str, args: dict) -> dict:
    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    result = executor.run(db, KEY, T, extract(answer).commands[0])
    assert result["status"] == "ok", result
    return result["result"]


def test_the_agents_goal_commands_and_votes_record_the_agent(tmp_path):
    db = Database(tmp_path / "a.db")
    try:
        goal = _agent(db, "goal_add", {"title": "keep the lights on"})
        task = _agent(db, "task_add", {"goal": goal["lineage"], "title": "check the fuses"})
        vote = _agent(db, "consensus_vote", {"target": task["did"], "value": 1})
        for did in (goal["did"], task["did"], vote["did"]):
            assert asked(db.conn, did) == ("agent", "cycle", None)
    finally:
        db.close()
