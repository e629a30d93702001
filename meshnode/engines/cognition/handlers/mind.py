"""The handlers of the commands over the agent's own thinking: help, memory, helper tasks (run by
``auxiliary``), the cycle's settings, thinking methods and ratings, and the LLMs it thinks with.

``llm_update`` changes what shapes its thinking (priority, timeout, model name) but never the
endpoint's URL, its API key variable or the validator role: pointing an LLM elsewhere could send
the key and the contexts to a stranger, and choosing its own validators would let the agent pass
its own answers.
"""

from __future__ import annotations

import json

from meshnode.records.mind import registry
from meshnode.engines.cognition.catalogue import help_of
from meshnode.engines.cognition.command_types import command_names, command_type
from meshnode.engines.cognition.handlers.rows import delete, rows_of
from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database


def _help(db, key, now, args):
    name = args.get("command")
    if name:
        kind = command_type(name)
        if kind is None:
            raise MeshnodeError("unknown_type", f"no command {name!r}; context 2 lists them all")
        return help_of(kind)
    return {name: command_type(name).summary for name in command_names()}


def _memory_add(db, key, now, args):
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO llm_memory (content, tags) VALUES (?, ?)",
                           (args["text"], json.dumps(args.get("tags", []))))
    return {"id": cur.lastrowid}


def _memory_delete(db, key, now, args):
    with db.transaction() as conn:
        if conn.execute("DELETE FROM llm_memory WHERE id = ?", (args["id"],)).rowcount == 0:
            raise MeshnodeError("not_found", f"no llm_memory entry {args['id']}")
    return {"deleted": args["id"]}


def _llm_task(db, key, now, args):
    """A task row run by an auxiliary loop (cognition/auxiliary.py), which the main loop starts."""
    loop = args.get("mode", "question") == "read_only_loop"
    config = {"max_ticks": args.get("max_ticks", 10) if loop else 1, "target_llm": args.get("target_llm"),
              **{k: args[k] for k in ("delay_s", "deadline_ms", "backoff") if k in args}}
    with db.transaction() as conn:
        if "task_id" in args:  # an existing task (a fact-check, say): the helper works on it, and may settle it
            row = conn.execute("SELECT repl_status, status FROM tasks WHERE id = ? AND lineage IS NULL",
                               (args["task_id"],)).fetchone()
            if row is None:
                raise MeshnodeError("not_found", f"no local task {args['task_id']} (a helper works on the agent's"
                                                " own tasks: fact checks and the like)")
            if row[0] == "running" or row[1] not in ("pending", "in_progress"):
                state = "being worked on" if row[0] == "running" else row[1]
                raise MeshnodeError("busy", f"task {args['task_id']} is {state}; a helper takes an open (pending) task")
            conn.execute("UPDATE tasks SET description = coalesce(description || char(10) || char(10), '') || ?,"
                         " status = 'in_progress', repl_mode = 'read_only', repl_status = 'running', repl_config = ?"
                         " WHERE id = ?", (args["task_description"], json.dumps(config), args["task_id"]))
            return {"task_id": args["task_id"], **config}
        cur = conn.execute("INSERT INTO tasks (name, description, tags, status, repl_mode, repl_status, repl_config)"
                           " VALUES (?, ?, ?, 'in_progress', 'read_only', 'running', ?)",
                           (args["task_description"][:120], args["task_description"], json.dumps(["llm:task"]),
                            json.dumps(config)))
    return {"task_id": cur.lastrowid, **config}


def _cycle_settings(db, key, now, args):
    """Stored in the agent's ``config`` table as ``cycle.<name>`` (JSON); the cycle reads them each tick."""
    idle = args.get("idle")
    if idle is not None:
        timeout = idle.get("timeout_seconds", 300)
        if set(idle) - {"on", "timeout_seconds", "on_note", "on_process"} \
                or any(not isinstance(idle.get(k, True), bool) for k in ("on", "on_note", "on_process")) \
                or isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 86400:
            raise MeshnodeError("bad_args", "idle is {on: bool, timeout_seconds: 1..86400, on_note: bool,"
                                " on_process: bool}")
    with db.transaction() as conn:
        conn.executemany("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET"
                         " value = excluded.value", [(f"cycle.{k}", json.dumps(v)) for k, v in args.items()])
    return {"set": sorted(args)}


def cycle_settings(db: Database) -> dict:
    rows = db.conn.execute("SELECT key, value FROM config WHERE key LIKE 'cycle.%'"
                           " AND key != 'cycle.checkpoint'").fetchall()
    out = {}
    for k, v in rows:
        try:
            out[k[len("cycle."):]] = json.loads(v)
        except ValueError:
            continue
    return out


def _methods(db, key, now, args):
    table = "thinking_methods" if args.get("kind", "thinking") == "thinking" else "stagnation_strategies"
    return rows_of(db.conn.execute(f"SELECT id, name, description, reputation FROM {table} WHERE active"
                                 " ORDER BY reputation DESC, id LIMIT 50"), decode=())


def _method_add(db, key, now, args):
    table = "thinking_methods" if args.get("kind", "thinking") == "thinking" else "stagnation_strategies"
    with db.transaction() as conn:
        cur = conn.execute(f"INSERT INTO {table} (name, description, source, tags) VALUES (?, ?, 'internal', ?)",
                           (args["name"], args["description"], json.dumps(args.get("tags", []))))
    return {"id": cur.lastrowid}


def _rate(db, key, now, args):
    target_type = "thinking_method" if args["kind"] == "thinking" else "stagnation_strategy"
    table = "thinking_methods" if args["kind"] == "thinking" else "stagnation_strategies"
    with db.transaction() as conn:
        if conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (args["id"],)).fetchone() is None:
            raise MeshnodeError("not_found", f"no {target_type} {args['id']}")
        conn.execute("INSERT INTO ratings (agent_id, target_type, target_id, rating, comment) VALUES (?, ?, ?, ?, ?)",
                     (key.did, target_type, args["id"], args["rating"], args.get("comment")))
    return {"rated": args["id"]}


def _ratings_list(db, key, now, args):
    where = " WHERE target_type = ?" if "target_type" in args else ""
    return rows_of(db.conn.execute(f"SELECT id, agent_id, target_type, target_id, rating, comment, timestamp"
                                   f" FROM ratings{where} ORDER BY id DESC LIMIT ?",
                                   (*([args["target_type"]] if where else []), args.get("limit", 20))),
                   clip=("comment",))


def _rating_delete(db, key, now, args):
    return delete(db, "ratings", "rating", args["id"])


def _llm_select(db, key, now, args):
    registry.select(db, args["name"])
    return {"main": args["name"]}


def _llm_update(db, key, now, args):
    e = registry.agent_update(db, args["name"], {k: args[k] for k in registry.AGENT_SETTINGS if k in args})
    return {"name": e.id, "priority": e.priority, "timeout_s": e.timeout_s, "model": e.model}


HANDLERS = {
    "help": _help,
    "llm_memory_add": _memory_add,
    "llm_memory_delete": _memory_delete,
    "llm_task": _llm_task,
    "cycle_settings": _cycle_settings,
    "methods_list": _methods,
    "method_add": _method_add,
    "rate": _rate,
    "ratings_list": _ratings_list,
    "rating_delete": _rating_delete,
    "llm_select": _llm_select,
    "llm_update": _llm_update,
}
