"""The handlers of the commands over notes: list, read, write, tag, mark read."""

from __future__ import annotations

from meshnode.records import knowledge
from meshnode.app.actions.notes import write_note, written
from meshnode.app.actor import AGENT
from meshnode.base.errors import MeshnodeError
from meshnode.store import speakers


def _note_list(db, key, now, args):
    """Notes, each with who wrote it by this node's provenance record (store.speakers), never by its text."""
    where = " WHERE n.hidden = 0" + (" AND n.read = 0" if args.get("unread") else "")
    rows = db.conn.execute("SELECT n.container_did, n.timestamp, n.topic, n.text, n.source, n.priority, n.read,"
                           f" {speakers.COLUMNS} FROM notes n {speakers.JOIN}{where}"
                           " ORDER BY n.priority DESC, n.timestamp DESC LIMIT ?", (args.get("limit", 20),)).fetchall()
    names = ("container_did", "timestamp", "topic", "text", "source", "priority", "read")
    return [{**speakers.of_row(key.did, r[len(names):]).fields(), **dict(zip(names, r))} for r in rows]


def _note_read(db, key, now, args):
    note = knowledge.read_note(db, args["id"])
    who = speakers.of_note(db.conn, key.did, args["id"])
    return {**who.fields(), **note} if who is not None else note


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
