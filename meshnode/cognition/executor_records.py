"""The seed's commands over the agent's own records, store-side: tags, reputation, known agents, the LLM
registry, identity, knowledge listings, goals and tasks, thinking methods and strategies,
ratings, read marks. Registered into ``executor`` on import (kept apart to keep files small)."""

from __future__ import annotations

import json

from meshnode import knowledge
from meshnode.cognition import registry
from meshnode.cognition.executor import handler
from meshnode.errors import MeshnodeError
from meshnode.reputation.reading import reputation_detail, reputation_rows


def _rows(cur) -> list[dict]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


@handler("tags_list")
def _tags(db, key, now, args):
    return _rows(db.conn.execute("SELECT tag, count(*) AS uses FROM container_tags GROUP BY tag"
                                 " ORDER BY uses DESC, tag LIMIT ?", (args.get("limit", 50),)))


@handler("reputation_list")
def _reputation_list(db, key, now, args):
    return reputation_rows(db, now_ms=now)[: args.get("limit", 50)]


@handler("reputation_show")
def _reputation_show(db, key, now, args):
    return reputation_detail(db, args["did"], now_ms=now)


@handler("agents_list")
def _agents(db, key, now, args):
    return _rows(db.conn.execute("SELECT id, name, tags, status, last_seen FROM agent_peers ORDER BY last_seen DESC"
                                 " LIMIT ?", (args.get("limit", 50),)))


@handler("llm_select")
def _llm_select(db, key, now, args):
    registry.select(db, args["name"])
    return {"main": args["name"]}


@handler("identity_show")
def _identity(db, key, now, args):
    return {"did": key.did, "peer_id": key.peer_id}


@handler("concept_list")
def _concepts(db, key, now, args):
    return knowledge.listing(db, "concepts", args.get("limit", 20))


@handler("link_list")
def _links(db, key, now, args):
    return knowledge.listing(db, "links", args.get("limit", 20))


@handler("methods_list")
def _methods(db, key, now, args):
    table = "thinking_methods" if args.get("kind", "thinking") == "thinking" else "stagnation_strategies"
    return _rows(db.conn.execute(f"SELECT id, name, description, reputation FROM {table} WHERE active"
                                 " ORDER BY reputation DESC, id LIMIT 50"))


@handler("method_add")
def _method_add(db, key, now, args):
    table = "thinking_methods" if args.get("kind", "thinking") == "thinking" else "stagnation_strategies"
    with db.transaction() as conn:
        cur = conn.execute(f"INSERT INTO {table} (name, description, source, tags) VALUES (?, ?, 'internal', ?)",
                           (args["name"], args["description"], json.dumps(args.get("tags", []))))
    return {"id": cur.lastrowid}


@handler("rate")
def _rate(db, key, now, args):
    target_type = "thinking_method" if args["kind"] == "thinking" else "stagnation_strategy"
    table = "thinking_methods" if args["kind"] == "thinking" else "stagnation_strategies"
    with db.transaction() as conn:
        if conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (args["id"],)).fetchone() is None:
            raise MeshnodeError("not_found", f"no {target_type} {args['id']}")
        conn.execute("INSERT INTO ratings (agent_id, target_type, target_id, rating, comment) VALUES (?, ?, ?, ?, ?)",
                     (key.did, target_type, args["id"], args["rating"], args.get("comment")))
    return {"rated": args["id"]}


@handler("note_readmark")
def _readmark(db, key, now, args):
    with db.transaction() as conn:
        if conn.execute("UPDATE notes SET read = ? WHERE container_did = ?",
                        (int(args.get("read", True)), args["id"])).rowcount == 0:
            raise MeshnodeError("not_found", f"no note {args['id']}")
    return {"id": args["id"], "read": bool(args.get("read", True))}


def pinned(db) -> list[str]:
    row = db.conn.execute("SELECT value FROM config WHERE key = 'cognition.pinned'").fetchone()
    try:
        value = json.loads(row[0]) if row else []
    except ValueError:
        value = []
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def _set_pinned(db, ids: list[str]) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT INTO config (key, value) VALUES ('cognition.pinned', ?) ON CONFLICT (key)"
                     " DO UPDATE SET value = excluded.value", (json.dumps(ids),))


@handler("pin")
def _pin(db, key, now, args):
    held = db.conn.execute("SELECT 1 FROM diary_entries WHERE lineage = ? OR container_did = ? UNION"
                           " SELECT 1 FROM concepts WHERE lineage = ? OR container_did = ?", (args["id"],) * 4).fetchone()
    if held is None:
        raise MeshnodeError("not_found", f"no diary entry or concept {args['id']}")
    ids = pinned(db)
    if args["id"] not in ids:
        _set_pinned(db, (ids + [args["id"]])[-32:])  # attention is finite: the oldest pin goes first
    return {"pinned": pinned(db)}


@handler("unpin")
def _unpin(db, key, now, args):
    _set_pinned(db, [x for x in pinned(db) if x != args["id"]])
    return {"pinned": pinned(db)}


from meshnode.cognition import executor_admin  # noqa: E402,F401  (registers itself)
executor_admin  # imported for its registrations (pyflakes ignores noqa)
