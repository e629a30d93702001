"""The error levels of seed 000 ("Обработка исключений"), and what each one does.

* **timeout**: the main LLM did not answer in its endpoint's time. The tick
  is restarted at once (contexts built again, the same tick number, no
  pause), at most ``MAX_RESTARTS`` times; the restarted prompt says so
  (context 4), and ``process_log`` records it with status ``timeout``.
  After that the endpoint counts as failing and the next one is tried.
* **error**: a command that was allowed failed while running (not found,
  bad value, ...). When it names its task (``"task_id"`` beside ``args``),
  or runs in a task's auxiliary loop, that task is frozen (``status =
  paused``, ``repl_status = error``) and waits for review; the freeze is
  logged with the task id. Only local tasks (``lineage IS NULL``) are frozen
  so: a shared (GMP) task changes only by a signed version.
* **crash**: something unexpected escaped a tick, or an auxiliary loop. A
  private note from ``system`` tells the person (once per distinct error,
  not once per tick); an auxiliary loop stops, the main loop goes on after
  its pause.

Store-side functions run in the store's worker thread.
"""

from __future__ import annotations

import json
import logging

from meshnode.engines.cognition.commands import Command
from meshnode.base.identity.keys import NodeKey
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import node
from meshnode.store.database import Database

log = logging.getLogger("meshnode.engines.cognition")

MAX_RESTARTS = 2
CRASH_TOPIC = "cognition crash"
CRASH_TAG = "cognition"


def _log(conn, name: str, value: dict, status: str, llm_id: str | None = None) -> None:
    conn.execute("INSERT INTO process_log (name, value, status, llm_id) VALUES (?, ?, ?, ?)",
                 (name, json.dumps(value, ensure_ascii=False, default=str)[:65536], status, llm_id))


def log_timeout(db: Database, tick: int, llm_id: str, restart: int, reason: str) -> None:
    """A timed-out request, and the restart it leads to; the restarted prompt shows it (context 4)."""
    with db.transaction() as conn:
        _log(conn, "cycle:timeout", {"tick": tick, "restart": restart, "of": MAX_RESTARTS, "error": reason,
                                     "note": "your last request timed out; the tick was restarted"},
             "timeout", llm_id)


def failed_tasks(commands: list[Command], results: list[dict], task_id: int | None = None) -> dict[int, dict]:
    """Task id -> the first executor error of a command working for it (``task_id``: every
    command's, as in an auxiliary loop). Refusals and extraction errors carry no ``code``
    and freeze nothing: they were never run."""
    named = {c.cmd_id: (task_id if task_id is not None else c.task_id) for c in commands}
    out: dict[int, dict] = {}
    for r in results:
        task = named.get(r.get("cmd_id"))
        if task is not None and r.get("status") == "error" and r.get("code"):
            out.setdefault(task, r)
    return out


def freeze(db: Database, failures: dict[int, dict], llm_id: str | None = None) -> list[int]:
    """Freeze each task whose command failed; returns the ids frozen (tasks that exist)."""
    frozen = []
    with db.transaction() as conn:
        for task, r in sorted(failures.items()):
            cur = conn.execute("UPDATE tasks SET status = 'paused', repl_status = CASE WHEN repl_mode = 'none'"
                               " THEN repl_status ELSE 'error' END, updated_at = CURRENT_TIMESTAMP"
                               " WHERE id = ? AND status != 'paused' AND lineage IS NULL", (task,))
            if cur.rowcount:
                frozen.append(task)
                _log(conn, f"cmd:freeze:{task}", {"task_id": task, "frozen": True, "cmd_id": r.get("cmd_id"),
                                                  "error": r.get("error"),
                                                  "note": f"task {task} is frozen until reviewed (task_update)"},
                     "error", llm_id)
    return frozen


def crash_note(db: Database, key: NodeKey, now_ms: int, where: str, error: str) -> str:
    """Tell the person: a private note from ``system`` (their notebook, `meshnode note list`)."""
    note = write_note(db, key, node("cognition"),
                      f"The cognitive core crashed ({where}): {error[:1000]}\nThe node's log has the traceback."
                      " The main cycle goes on after its pause; an auxiliary loop stays stopped and its task frozen.",
                      now_ms=now_ms, topic=CRASH_TOPIC, priority=5, tags=[CRASH_TAG])  # read: not the agent's mail
    with db.transaction() as conn:
        _log(conn, "cycle:crash", {"where": where, "error": error[:1000], "note": note.did}, "error")
    return note.did


class CrashReporter:
    """One note per distinct crash, however many ticks it repeats in."""

    def __init__(self, store, key: NodeKey, clock):
        self.store, self.key, self.clock = store, key, clock
        self._last: str | None = None

    async def report(self, where: str, exc: BaseException) -> None:
        text = f"{type(exc).__name__}: {exc}"
        if text == self._last:
            return
        self._last = text
        try:
            await self.store.write_background(crash_note, self.key, self.clock(), where, text)
        except Exception:  # the store itself may be what broke: the log still has it
            log.exception("could not write the crash note")

    def recovered(self) -> None:
        self._last = None


def _freeze_aux_task(db: Database, task_id: int) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE tasks SET status = 'paused', repl_status = 'error' WHERE id = ? AND lineage IS NULL",
                     (task_id,))


async def aux_crashed(store, crashes: CrashReporter, task_id: int, exc: BaseException) -> None:
    """An auxiliary loop that crashed has stopped: its task is frozen and its loop marked as failed
    (if the store still takes writes), and the person is told."""
    log.error("auxiliary loop of task %d failed", task_id, exc_info=exc)
    try:
        await store.write_background(_freeze_aux_task, task_id)
    except Exception:
        log.exception("could not freeze task %d", task_id)
    await crashes.report(f"auxiliary loop of task {task_id}", exc)
