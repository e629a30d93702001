"""Auxiliary loops: a task given to another LLM (seed 000, "постановка задачи другой LLM").

The main loop's ``llm_task`` command creates a task row with
``repl_mode = 'read_only'`` and starts a loop for it: a one-shot question
(one tick) or a read-only REPL (up to ``max_ticks``). An auxiliary loop may
read everything, but it may change only its own task row, and it writes its
reasoning only as private notes with source ``llm:task`` tagged with its task
id. Anything else it asks for is refused with a reason and logged. The main
loop starts the loops of running tasks and a loop stops when its task is done
or frozen, its ``repl_status`` is no longer ``running``, or its ticks are
spent.
"""

from __future__ import annotations

import json
import logging

import trio

from meshnode.engines.cognition import error_levels
from meshnode.records.mind import registry
from meshnode.engines.cognition.catalogue import catalogue
from meshnode.engines.cognition.command_types import command_names, command_type
from meshnode.engines.cognition.commands import Command, extract
from meshnode.engines.cognition.contexts import FORMAT
from meshnode.engines.cognition.executor import handles, run as run_command
from meshnode.engines.cognition.llm import LLMError, chat
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import AGENT_TASK
from meshnode.store.database import Database

log = logging.getLogger("meshnode.engines.cognition")

PROMPT = ("You work on one task for the main agent. You may read anything (list, search, read commands), "
          "update only your own task (task_update with your task id: status, pinned, or on a fact-check the "
          "verdict verified|rejected with evidence), and write your findings "
          "with note_add. Answer with your reasoning, then a # Commands: section.")
WRITES = ("task_update", "note_add")  # the only changes an auxiliary loop may make (task_update: its own task)


def running_tasks(db: Database) -> list[tuple[int, dict]]:
    rows = db.conn.execute("SELECT id, repl_config FROM tasks WHERE repl_mode = 'read_only'"
                           " AND repl_status = 'running' AND status IN ('pending', 'in_progress')").fetchall()
    out = []
    for task_id, config in rows:
        try:
            out.append((task_id, json.loads(config or "{}")))
        except ValueError:
            out.append((task_id, {}))
    return out


def allowed(task_id: int, cmd: Command) -> str | None:
    """None when an auxiliary loop of ``task_id`` may run ``cmd``; else the reason it may not."""
    if cmd.type == "task_update":
        return None if cmd.args.get("id") == task_id else f"an auxiliary loop edits only its own task ({task_id})"
    if cmd.type in WRITES or not cmd.mutating:
        return None
    return f"{cmd.type} changes the store; an auxiliary loop is read-only"


def commands() -> str:
    """The catalogue lines of the commands an auxiliary loop may send (it runs store-side ones only)."""
    return catalogue([n for n in command_names() if handles(n) and (n in WRITES or not command_type(n).mutating)])


def run_for_task(db: Database, key: NodeKey, now: int, task_id: int, cmd: Command) -> dict:
    refusal = allowed(task_id, cmd)
    if refusal is not None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": f"refused: {refusal}"}
    if cmd.type == "note_add":  # its reasoning: a private note from llm:task, tagged with the task
        note = write_note(db, key, AGENT_TASK, cmd.args["text"], now_ms=now, topic=f"task {task_id}",
                          tags=["llm:task", f"task:{task_id}"])
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": {"did": note.did}}
    return run_command(db, key, now, cmd)


def _context(db: Database, task_id: int) -> str:
    name, description, status = db.conn.execute("SELECT name, description, status FROM tasks WHERE id = ?",
                                                (task_id,)).fetchone()
    results = db.conn.execute("SELECT value FROM process_log WHERE name LIKE ? ORDER BY id DESC LIMIT 10",
                              (f"task{task_id}:cmd:%",)).fetchall()
    return (f"Your task (id {task_id}, {status}): {name}\n{description or ''}\n\n"
            "Results of your last commands:\n" + ("\n".join(r[0] for r in results) or "(none)")
            + "\n\nYour commands:\n" + FORMAT + commands())


def _apply(db: Database, key: NodeKey, now: int, task_id: int, answer: str) -> int:
    extraction = extract(answer)
    results = [run_for_task(db, key, now, task_id, c) for c in extraction.commands]
    results += [{"cmd_id": e.cmd_id, "status": "error", "error": f"{e.code}: {e.reason}"} for e in extraction.errors]
    error_levels.freeze(db, error_levels.failed_tasks(extraction.commands, results, task_id))  # error -> frozen
    with db.transaction() as conn:
        for r in results:
            conn.execute("INSERT INTO process_log (name, value, status) VALUES (?, ?, ?)",
                         (f"task{task_id}:cmd:{r.get('cmd_id') or '?'}", json.dumps(r, default=str)[:65536],
                          "ok" if r["status"] == "ok" else "error"))
    return len(results)


def _finish(db: Database, task_id: int) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE tasks SET repl_status = 'stopped' WHERE id = ? AND repl_status = 'running'", (task_id,))


async def loop(store, key: NodeKey, clock, task_id: int, config: dict, pause_s: float, *,
               until_resumed=None) -> None:
    """One auxiliary loop, until its task no longer runs, its ticks are spent or its deadline passes.
    Its ``repl_config``: ``max_ticks``, ``delay_s`` (between ticks; the main pause by default),
    ``deadline_ms`` (epoch ms), ``backoff`` (the delay's growth after a failed LLM call).
    ``until_resumed``: awaited before each round (a person's pause of the agent holds it too)."""
    delay = float(config.get("delay_s", pause_s))
    try:
        for _ in range(int(config.get("max_ticks", 1))):
            if until_resumed is not None:
                await until_resumed()
            if task_id not in {t for t, _ in await store.read(running_tasks)}:
                return
            if config.get("deadline_ms") and clock() > int(config["deadline_ms"]):
                return
            endpoints = await store.read(registry.mains)
            target = config.get("target_llm")
            endpoints = [e for e in endpoints if e.id == target] or endpoints
            if not endpoints:
                return
            messages = [{"role": "system", "content": PROMPT},
                        {"role": "user", "content": await store.read(_context, task_id)}]
            try:
                answer = await chat(endpoints[0], messages)
            except LLMError as exc:
                log.warning("task %d: %s", task_id, exc.reason)
                delay *= float(config.get("backoff", 2.0))
                await trio.sleep(delay)
                continue
            await store.write_background(_apply, key, clock(), task_id, answer)
            await trio.sleep(delay)
    except MeshnodeError as exc:
        log.warning("task %d loop: %s", task_id, exc.reason)
    finally:
        with trio.CancelScope(shield=True):
            await store.write_background(_finish, task_id)
