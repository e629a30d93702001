"""The error levels' store side: which failures freeze a task, one note per distinct crash, and a
crashed auxiliary loop's task frozen even when the store is half broken. (The cycle's use of them,
over real HTTP: tests/test_cognition_seed_items.py.)"""

from __future__ import annotations

from meshnode.engines.cognition import error_levels
from meshnode.engines.cognition.commands import Command
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Store

KEY = NodeKey(bytes(32))
T0 = 1_800_000_000_000


def test_only_commands_that_ran_and_failed_freeze_their_task():
    commands = [Command("a", "diary_read", {}, task_id=1), Command("b", "note_add", {}, task_id=2),
                Command("c", "diary_add", {}), Command("d", "task_add", {}, task_id=3)]
    results = [{"cmd_id": "a", "status": "error", "error": "no diary entry x", "code": "not_found"},
               {"cmd_id": "b", "status": "ok", "result": {}},
               {"cmd_id": "c", "status": "error", "error": "bad", "code": "bad_value"},  # names no task
               {"cmd_id": "d", "status": "error", "error": "held: the validators rated it -1"}]  # never ran
    assert error_levels.failed_tasks(commands, results) == {1: results[0]}
    # in an auxiliary loop every command works for the loop's task; a refusal has no code
    refusal = {"cmd_id": "c", "status": "error", "error": "refused: read-only"}
    assert error_levels.failed_tasks(commands, [refusal, results[2]], task_id=9) == {9: results[2]}


def _notes(db) -> list[tuple]:
    return db.conn.execute("SELECT source, topic, read, text FROM notes ORDER BY id").fetchall()


async def test_one_note_per_distinct_crash_and_a_crashed_helper_is_frozen(tmp_path):
    async with await Store.open(tmp_path / "db.sqlite") as store:
        crashes = error_levels.CrashReporter(store, KEY, lambda: T0)
        for _ in range(3):
            await crashes.report("main cycle, tick 4", ValueError("broken"))
        assert [n[:3] for n in await store.read(_notes)] == [("system", "cognition crash", 1)]
        await crashes.report("main cycle, tick 7", KeyError("other"))
        crashes.recovered()
        await crashes.report("main cycle, tick 9", ValueError("broken"))  # after a good tick: news again
        assert len(await store.read(_notes)) == 3

        def add_task(db):
            with db.transaction() as conn:
                return conn.execute("INSERT INTO tasks (name, status, repl_mode, repl_status) VALUES"
                                    " ('helper', 'in_progress', 'read_only', 'running')").lastrowid

        task = await store.write(add_task)
        await error_levels.aux_crashed(store, crashes, task, RuntimeError("helper fell over"))
        row = await store.read(lambda db: db.conn.execute("SELECT status, repl_status FROM tasks").fetchone())
        assert row == ("paused", "error")
        assert "auxiliary loop of task" in (await store.read(_notes))[-1][3]

        def break_tasks(db):
            with db.transaction() as conn:
                conn.execute("DROP TABLE tasks")

        await store.write(break_tasks)  # the freeze cannot be written: the note still is
        await error_levels.aux_crashed(store, crashes, task, RuntimeError("worse"))
        assert "worse" in (await store.read(_notes))[-1][3]
