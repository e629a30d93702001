"""Running the commands an answer carried, against the store (seed 000, step 8).

Each command type has a handler that takes the database, the node key, the
time and the command's validated arguments, and returns a small JSON-able
result the next tick shows the LLM. Until the action gate exists (issue 7),
commands act on the store only; types not wired yet answer so, plainly.
Handlers run in the store's worker thread (one writer).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from meshnode import chat, knowledge
from meshnode.cognition.command_types import command_names, command_type
from meshnode.cognition.commands import Command
from meshnode.errors import MeshnodeError
from meshnode.identity.keys import NodeKey
from meshnode.notes import author, make_note, own_local
from meshnode.store.database import Database
from meshnode.store.sharing import friends

Handler = Callable[[Database, NodeKey, int, dict], Any]
_HANDLERS: dict[str, Handler] = {}


def handler(name: str):
    def register(fn: Handler) -> Handler:
        _HANDLERS[name] = fn
        return fn
    return register


def handles(name: str) -> bool:
    """Whether this store-side executor runs ``name`` (the rest need the cycle: mesh, gate, processes)."""
    return name in _HANDLERS


def run(db: Database, key: NodeKey, now_ms: int, cmd: Command) -> dict:
    """{"cmd_id", "type", "status": ok|error, "result" or "error"}; never raises for a command's fault."""
    fn = _HANDLERS.get(cmd.type)
    if fn is None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error",
                "error": f"{cmd.type} is not available to the cognitive core yet"}
    args = cmd.args
    if cmd.type == "llm_task" and cmd.target_llm and "target_llm" not in args:  # the seed puts it beside args
        args = {**args, "target_llm": cmd.target_llm}
    try:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": fn(db, key, now_ms, args)}
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}


@handler("help")
def _help(db, key, now, args):
    from meshnode.cognition.catalogue import help_of

    name = args.get("command")
    if name:
        kind = command_type(name)
        if kind is None:
            raise MeshnodeError("unknown_type", f"no command {name!r}; context 2 lists them all")
        return help_of(kind)
    return {name: command_type(name).summary for name in command_names()}


@handler("diary_list")
def _diary_list(db, key, now, args):
    rows = knowledge.listing(db, "diary", args.get("limit", 20))
    tags = set(args.get("tags", []))
    return [r for r in rows if not tags or tags & set(r["tags"])]


@handler("diary_search")
def _diary_search(db, key, now, args):
    pattern = "%" + args["query"].replace("%", "\\%").replace("_", "\\_") + "%"
    rows = db.conn.execute("SELECT lineage, container_did, text, timestamp FROM diary_entries WHERE text LIKE ?"
                           " ESCAPE '\\' ORDER BY timestamp DESC LIMIT ?", (pattern, args.get("limit", 20))).fetchall()
    return [dict(zip(("lineage", "container_did", "text", "timestamp"), r)) for r in rows]


@handler("diary_read")
def _diary_read(db, key, now, args):
    row = db.conn.execute("SELECT lineage, container_did, text, tags, forks, timestamp FROM diary_entries"
                          " WHERE lineage = ? OR container_did = ?", (args["id"], args["id"])).fetchone()
    if row is None:
        raise MeshnodeError("not_found", f"no diary entry {args['id']}")
    return dict(zip(("lineage", "container_did", "text", "tags", "forks", "timestamp"), row))


def _keep(db: Database, c, now: int) -> dict:
    db.put_container(c, received_at_ms=now)
    return {"did": c.did}


@handler("diary_add")
def _diary_add(db, key, now, args):
    return _keep(db, knowledge.make_diary_entry(key, args["text"], now_ms=now, title=args.get("title"),
                                                topics=args.get("tags"),
                                                replaces=[args["replaces"]] if args.get("replaces") else None), now)


@handler("concept_add")
def _concept_add(db, key, now, args):
    return _keep(db, knowledge.make_concept(key, args["label"], now_ms=now, description=args.get("description"),
                                            aliases=args.get("aliases"), tags=args.get("tags")), now)


@handler("link_add")
def _link_add(db, key, now, args):
    return _keep(db, knowledge.make_link(key, args["source"], args["relation"], args["targets"], now_ms=now), now)


@handler("note_list")
def _note_list(db, key, now, args):
    where = " WHERE hidden = 0" + (" AND read = 0" if args.get("unread") else "")
    rows = db.conn.execute("SELECT container_did, timestamp, topic, text, source, priority, read, agent_did,"
                           " (SELECT name FROM agent_peers WHERE agent_peers.id = notes.agent_did) FROM notes"
                           f"{where} ORDER BY priority DESC, timestamp DESC LIMIT ?",
                           (args.get("limit", 20),)).fetchall()
    names = ("container_did", "timestamp", "topic", "text", "source", "priority", "read")
    return [{**dict(zip(names, r)), "from": author(key.did, r[7], r[4], r[8])} for r in rows]


@handler("note_read")
def _note_read(db, key, now, args):
    return knowledge.read_note(db, args["id"])


@handler("note_add")
def _note_add(db, key, now, args):
    audience = args.get("audience", "private")
    if args.get("reply_to"):  # an answer to the person: in their thread, and their message marked read
        return chat.reply(db, key, now, args["text"], args["reply_to"], audience=audience,
                          recipients=friends(db) if audience == "friends" else None)
    note = make_note(key, args["text"], now_ms=now, topic=args.get("topic"), source="llm", audience=audience,
                     recipients=friends(db) if audience == "friends" else None)
    db.put_container(note, received_at_ms=now, local=own_local())
    return {"did": note.did}


@handler("note_tag")
def _note_tag(db, key, now, args):
    return {"tags": knowledge.tag_note(db, args["id"], args["tags"], [])}


@handler("llm_memory_add")
def _memory_add(db, key, now, args):
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO llm_memory (content, tags) VALUES (?, ?)",
                           (args["text"], json.dumps(args.get("tags", []))))
    return {"id": cur.lastrowid}


@handler("llm_memory_delete")
def _memory_delete(db, key, now, args):
    with db.transaction() as conn:
        if conn.execute("DELETE FROM llm_memory WHERE id = ?", (args["id"],)).rowcount == 0:
            raise MeshnodeError("not_found", f"no llm_memory entry {args['id']}")
    return {"deleted": args["id"]}


@handler("consensus_vote")
def _consensus_vote(db, key, now, args):
    from meshnode.consensus.stored import cast_vote

    vote = cast_vote(db, key, args["target"], args["value"], now_ms=now, decision=args.get("decision", "general"))
    return {"did": vote.did}


@handler("cycle_settings")
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


@handler("llm_task")
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


def _register_the_rest():
    """The rest of the command set lives in executor_records, which registers itself on import."""
    from meshnode.cognition import (executor_edits, executor_ethics, executor_gmp, executor_records, executor_settings,
                                    processes)

    return executor_records, processes, executor_ethics, executor_edits, executor_settings, executor_gmp


_register_the_rest()
