"""The handlers of the commands over notes: list, read, write, tag, mark read."""

from __future__ import annotations

from meshnode.records import knowledge
from meshnode.app.actions.notes import write_note, written
from meshnode.app.actor import AGENT
from meshnode.base.errors import MeshnodeError
from meshnode.domain.notes import author


def _note_list(db, key, now, args):
    where = " WHERE hidden = 0" + (" AND read = 0" if args.get("unread") else "")
    rows = db.conn.execute("SELECT container_did, timestamp, topic, text, source, priority, read, agent_did,"
                           " (SELECT name FROM agent_peers WHERE agent_peers.id = notes.agent_did) FROM notes"
                           f"{where} ORDER BY priority DESC, timestamp DESC LIMIT ?",
                           (args.get("limit", 20),)).fetchall()
    names = ("container_did", "timestamp", "topic", "text", "source", "priority", "read")
    return [{**dict(zip(names, r)), "from": author(key.did, r[7], r[4], r[8])} for r in rows]


def _note_read(db, key, now, args):
    return knowledge.read_note(db, args["id"])


def _note_add(db, key, now, args):
    """A private note of the agent's (one that leaves the node is sent by ``sending``, through the gate)."""
    note = write_note(db, key, AGENT, args["text"], now_ms=now, topic=args.get("topic"),
                      audience=args.get("audience", "private"), reply_to=args.get("reply_to"))
    return written(note, AGENT, args.get("reply_to"))


def _note_tag(db, key, now, args):
    return {"tags": knowledge.tag_note(db, args["id"], args["tags"], [])}


def _readmark(db, key, now, args):
    with db.transaction() as conn:
        if conn.execute("UPDATE notes SET read = ? WHERE container_did = ?",
                        (int(args.get("read", True)), args["id"])).rowcount == 0:
            raise MeshnodeError("not_found", f"no note {args['id']}")
    return {"id": args["id"], "read": bool(args.get("read", True))}


HANDLERS = {
    "note_list": _note_list,
    "note_read": _note_read,
    "note_add": _note_add,
    "note_tag": _note_tag,
    "note_readmark": _readmark,
}
