"""The handlers of the commands over notes: list, read, write, tag, mark read."""

from __future__ import annotations

from meshnode import chat, knowledge
from meshnode.errors import MeshnodeError
from meshnode.notes import author, make_note, own_local
from meshnode.store.sharing import friends


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
    audience = args.get("audience", "private")
    if args.get("reply_to"):  # an answer to the person: in their thread, and their message marked read
        return chat.reply(db, key, now, args["text"], args["reply_to"], audience=audience,
                          recipients=friends(db) if audience == "friends" else None)
    note = make_note(key, args["text"], now_ms=now, topic=args.get("topic"), source="llm", audience=audience,
                     recipients=friends(db) if audience == "friends" else None)
    db.put_container(note, received_at_ms=now, local=own_local())
    return {"did": note.did}


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
