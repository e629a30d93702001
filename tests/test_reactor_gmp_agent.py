"""The reactor's side of the agent's GMP work (issue 37), in-process on two agents' databases:
the delegator is woken when another works on or finishes a task it created (task.progress,
task.result, until it reviews the result), and a final report names tasks by the ids the agent
is shown (short ids), an unknown one being an error the agent reads, not a claim found missing."""

from __future__ import annotations

import trio

from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.cognition.commands import Command
from meshnode.engines.cognition.wake import WakeSlot, _Run
from meshnode.engines.reactor import adapters, traces
from meshnode.engines.reactor.limits import rule_for
from meshnode.engines.reactor.types import FinalReport, TraceKind
from meshnode.records.gmp import service
from test_cognition_gmp import A, B, T, copy_all, dbs, run  # noqa: F401 (dbs: the fixture)

CFG = ReactorConfig()


def _held_by_b(a, b):
    goal = run(a, A, T, "goal_add", {"title": "map the river", "participants": [B.did]})
    task = run(a, A, T + 1, "task_add", {"title": "survey the ford", "goal": goal["goal"]})
    return _give_to_b(a, b, task, T + 2)


def _give_to_b(a, b, task, t):
    """A offers ``task`` to B, B accepts, A's node assigns it (three ms from ``t``)."""
    run(a, A, t, "task_delegate", {"task": task["task"], "to": [B.did]})
    copy_all(a, b)
    accepted = run(b, B, t + 1, "task_accept", {"task": task["task"]})
    copy_all(b, a)
    service.on_admitted(a, A, t + 2, [accepted["did"]])
    copy_all(a, b)
    return task


def _work(db, did, now):
    return [(e.event_type, e.summary) for e in adapters.scan(db, now, CFG, self_did=did)
            if e.event_type in ("task.progress", "task.result")]


def test_the_delegator_is_woken_by_progress_and_by_the_result_until_it_reviews_it(dbs):
    a, b = dbs[A.did], dbs[B.did]
    task = _held_by_b(a, b)
    assert _work(a, A.did, T + 5) == []
    run(b, B, T + 6, "task_progress", {"task": task["task"], "progress": 0.4, "summary": "half the bank"})
    copy_all(b, a)
    (progress,) = [e for e in adapters.scan(a, T + 7, CFG, self_did=A.did) if e.event_type == "task.progress"]
    assert "40 %" in progress.summary and "half the bank" in progress.summary
    assert progress.required_trace == (TraceKind.NONE,) and progress.refs["lineage"] == task["lineage"]
    rule, route, off = rule_for("task.progress", "agent", CFG)
    assert (rule.name, route, rule.wakes, off) == ("task_progress", "agent", True, False)
    assert _work(b, B.did, T + 7) == []  # the holder's own step wakes nobody on its side
    run(b, B, T + 8, "task_done", {"task": task["task"], "summary": "knee deep"})
    copy_all(b, a)
    found = _work(a, A.did, T + 9)
    assert [t for t, _ in found] == ["task.result"] and "to review" in found[0][1]  # progress of a finished one: no
    run(a, A, T + 10, "task_review", {"task": task["task"], "verdict": "accept"})
    assert _work(a, A.did, T + 11) == []
    assert _work(a, A.did, T + 9 + 25 * 3_600_000) == []  # and older results wake nobody (the prompt lists them)


class _Store:
    def __init__(self, db):
        self.db = db

    async def read(self, fn, *args):
        return fn(self.db, *args)


def test_a_report_names_tasks_by_their_short_ids_and_an_unknown_one_is_an_error_to_the_agent(dbs):
    a, b = dbs[A.did], dbs[B.did]
    task = _held_by_b(a, b)
    run(b, B, T + 6, "task_progress", {"task": task["task"], "progress": 0.4})
    cycle = type("Cycle", (), {"store": _Store(b), "clock": staticmethod(lambda: T + 7), "metrics": None})()
    slot = WakeSlot(cycle)
    slot._run = slot._ticking = _Run("job-1", "CTX", 3)

    async def take(ids):
        return await slot.take(Command("r", "reactor_report", {"task_updates": ids}))

    wrong = trio.run(take, [task["task"], "nosuchtask9"])
    assert wrong["status"] == "error" and wrong["code"] == "unknown_task" and "nosuchtask9" in wrong["error"]
    assert slot._run.report is None  # nothing recorded: the agent may send a corrected report
    right = trio.run(take, [task["task"], task["lineage"]])
    assert right["status"] == "ok" and slot._run.report["task_updates"] == [task["lineage"]]
    # and the reactor's check takes a short id too (an external agent's report is not resolved before)
    report = FinalReport(processed_messages=(), task_updates=(task["task"],), outgoing_messages=(), blocked=False,
                         blocked_reason="", needs_human=False, next_check_at_ms=None)
    assert traces.check_report(b, report, T + 5, self_did=B.did, agent=B.did) == ()
    assert traces.check_report(b, report, T + 7, self_did=B.did, agent=B.did) \
        == (f"task_updates {task['task']}: no task version or entry by this node since the wake",)


def test_results_from_before_reviews_existed_count_as_reviewed(tmp_path, monkeypatch):
    """Migration 0030: an upgrade does not ask the agent to review its whole past, while a result
    arriving after it is one to review."""
    from meshnode.engines.cognition import contexts
    from meshnode.store import Database
    from meshnode.store import migrate as migrate_module

    steps = migrate_module.migrations()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps[:29])
    a, b = Database(tmp_path / "a.db"), Database(tmp_path / "b.db")
    try:
        task = _held_by_b(a, b)
        run(b, B, T + 6, "task_done", {"task": task["task"], "summary": "done before the upgrade"})
        copy_all(b, a)
        assert a.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'task_reviews'").fetchone() == (0,)
    finally:
        a.close()
    monkeypatch.setattr(migrate_module, "migrations", lambda: steps)
    a = Database(tmp_path / "a.db")
    try:
        assert "results_to_review" not in contexts.waiting(a, A.did, T + 7)
        assert _work(a, A.did, T + 7) == []
        assert run(a, A, T + 7, "task_read", {"task": task["task"]})["review"]["actor"] == "migration"
        again = run(a, A, T + 8, "task_add", {"title": "draw it", "goal": run(a, A, T + 8, "goal_list", {})[0]["goal"]})
        _give_to_b(a, b, again, T + 9)
        run(b, B, T + 12, "task_done", {"task": again["task"], "summary": "drawn"})
        copy_all(b, a)
        assert [r["task"] for r in contexts.waiting(a, A.did, T + 13)["results_to_review"]] == [again["task"]]
    finally:
        a.close()
        b.close()
