"""The handlers of the commands over the agent's knowledge: diary entries, concepts, links, tags, pins.

Each takes the database, the node key, the time and the command's checked arguments and returns a
small JSON-able result (``executor`` runs them in the store's worker thread).
"""

from __future__ import annotations

import json

from meshnode.records import knowledge
from meshnode.app.actions.knowledge import add_concept, add_diary_entry, add_link
from meshnode.app.actor import AGENT
from meshnode.engines.cognition.handlers.rows import rows_of
from meshnode.base.errors import MeshnodeError


def _diary_list(db, key, now, args):
    rows = knowledge.listing(db, "diary", args.get("limit", 20))
    tags = set(args.get("tags", []))
    return [r for r in rows if not tags or tags & set(r["tags"])]


def _diary_search(db, key, now, args):
    pattern = "%" + args["query"].replace("%", "\\%").replace("_", "\\_") + "%"
    rows = db.conn.execute("SELECT lineage, container_did, text, timestamp FROM diary_entries WHERE text LIKE ?"
                           " ESCAPE '\\' ORDER BY timestamp DESC LIMIT ?", (pattern, args.get("limit", 20))).fetchall()
    return [dict(zip(("lineage", "container_did", "text", "timestamp"), r)) for r in rows]


def _diary_read(db, key, now, args):
    row = db.conn.execute("SELECT lineage, container_did, text, tags, forks, timestamp FROM diary_entries"
                          " WHERE lineage = ? OR container_did = ?", (args["id"], args["id"])).fetchone()
    if row is None:
        raise MeshnodeError("not_found", f"no diary entry {args['id']}")
    return dict(zip(("lineage", "container_did", "text", "tags", "forks", "timestamp"), row))


def _diary_add(db, key, now, args):
    return {"did": add_diary_entry(db, key, AGENT, args["text"], now_ms=now, title=args.get("title"),
                                   topics=args.get("tags"),
                                   previous=[args["replaces"]] if args.get("replaces") else None).did}


def _concept_add(db, key, now, args):
    return {"did": add_concept(db, key, AGENT, args["label"], now_ms=now, description=args.get("description"),
                               aliases=args.get("aliases"), tags=args.get("tags")).did}


def _concepts(db, key, now, args):
    return knowledge.listing(db, "concepts", args.get("limit", 20))


def _link_add(db, key, now, args):
    return {"did": add_link(db, key, AGENT, args["source"], args["relation"], args["targets"], now_ms=now).did}


def _links(db, key, now, args):
    return knowledge.listing(db, "links", args.get("limit", 20))


def _tags(db, key, now, args):
    return rows_of(db.conn.execute("SELECT tag, count(*) AS uses FROM container_tags GROUP BY tag"
                                 " ORDER BY uses DESC, tag LIMIT ?", (args.get("limit", 50),)), decode=())


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


def _pin(db, key, now, args):
    held = db.conn.execute("SELECT 1 FROM diary_entries WHERE lineage = ? OR container_did = ? UNION"
                           " SELECT 1 FROM concepts WHERE lineage = ? OR container_did = ?", (args["id"],) * 4).fetchone()
    if held is None:
        raise MeshnodeError("not_found", f"no diary entry or concept {args['id']}")
    ids = pinned(db)
    if args["id"] not in ids:
        _set_pinned(db, (ids + [args["id"]])[-32:])  # attention is finite: the oldest pin goes first
    return {"pinned": pinned(db)}


def _unpin(db, key, now, args):
    _set_pinned(db, [x for x in pinned(db) if x != args["id"]])
    return {"pinned": pinned(db)}


HANDLERS = {
    "diary_list": _diary_list,
    "diary_search": _diary_search,
    "diary_read": _diary_read,
    "diary_add": _diary_add,
    "concept_add": _concept_add,
    "concept_list": _concepts,
    "link_add": _link_add,
    "link_list": _links,
    "tags_list": _tags,
    "pin": _pin,
    "unpin": _unpin,
}
