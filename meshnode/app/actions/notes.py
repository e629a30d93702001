"""Notes: writing one (for anyone who may ask) and reading a page of them.

``write_note`` is the whole write, for callers already inside the store's writer (a transaction
of their own, as the agent's store-side commands are); ``note_add`` is the action: the write,
then what follows it on a running node (a public note gossiped, the reactor poked).
"""

from __future__ import annotations

import sqlite3
from typing import Callable

from meshnode.store import chat
from meshnode.store import names as store_names
from meshnode.records import knowledge
from meshnode.app.actor import Actor, signed_source
from meshnode.app.context import App
from meshnode.base.container import Container
from meshnode.base.errors import MeshnodeError
from meshnode.domain.notes import make_note
from meshnode.store.sharing import friends

MAX_TAGS = 64


def write_note(db, key, actor: Actor, text: str, *, now_ms: int, topic: str | None = None,
               audience: str = "private", priority: int = 0, tags: list | None = None, forward: int = 0,
               reply_to: str | None = None, read: bool | None = None, approved_by: Actor | None = None,
               recipients: list[str] | None = None,
               then: Callable[[sqlite3.Connection, Container], None] | None = None) -> Container:
    """Sign and store a note written for ``actor`` with the record of who asked (one transaction).

    A ``friends`` note is for this node's friends (``recipients`` names others, e.g. the one
    agent a message is for); ``reply_to`` puts it in that note's thread unless ``topic`` is given;
    ``read`` defaults to read for what the agent or the node writes (it is not the agent's mail);
    ``then(conn, note)`` runs in the same transaction once it is stored."""
    answered = None
    if reply_to is not None:  # a reply goes in its thread (meshnode.store.chat)
        if actor.kind == "agent":  # the agent answers the person or an A2A party: their message, marked read
            target = chat.person_note(db, key.did, str(reply_to))
            if target is None:
                raise chat.ChatError("not_found", f"no message {str(reply_to)[:80]} from the person or an A2A party"
                                     " on this node: reply_to takes an id of context 6a (Messages from the person)"
                                     " or 6b (Messages from A2A parties)")
            topic, answered = chat.thread_topic(*target), str(reply_to)
        else:
            topic = topic or chat.reply_topic(db, str(reply_to))
    if audience == "friends" and recipients is None:
        recipients = friends(db)
    note = make_note(key, text, now_ms=now_ms, topic=topic, source=signed_source(actor), audience=audience,
                     priority=int(priority), recipients=recipients, forward=int(forward), reply_to=reply_to)
    with db.transaction() as conn:
        if db.put_container_in(conn, note, received_at_ms=now_ms, local=local_fields(actor, tags, read, approved_by)):
            if answered is not None:
                conn.execute("UPDATE notes SET read = 1 WHERE container_did = ?", (answered,))
            if then is not None:
                then(conn, note)
    return note


def local_fields(actor: Actor, tags: list | None = None, read: bool | None = None,
                 approved_by: Actor | None = None) -> dict:
    """The unsigned fields a note this node writes starts with (store ``local``): its local tags,
    its read mark, and who asked (and approved) it."""
    tags = [str(t) for t in (tags or [])]
    if len(tags) > MAX_TAGS:
        raise MeshnodeError("bad_request", f"a note has at most {MAX_TAGS} local tags")
    return {"tags": tags, "read": actor.kind in ("agent", "node") if read is None else read,
            "asked_by": actor.row(), "approved_by": approved_by.row() if approved_by else None}


async def note_add(app: App, actor: Actor, text: str, topic: str | None = None, audience: str = "private",
                   priority: int = 0, tags: list | None = None, forward: int = 0, reply_to: str | None = None,
                   approved_by: Actor | None = None) -> dict:
    """Write a note for ``actor``; a public one is gossiped at once when the node runs (else the
    next run's sync carries it), and the reactor looks at it (it may be for the agent). One too
    large for a gossip message is pushed to the connected peers instead: ``sent`` says so."""
    t = app.clock()
    note = await app.store.write(lambda db: write_note(db, app.key, actor, text, now_ms=t, topic=topic,
                                                       audience=audience, priority=priority, tags=tags,
                                                       forward=forward, reply_to=reply_to,
                                                       approved_by=approved_by))
    sent = await spread(app, note, t)
    return written(note, actor, reply_to, sent)


def written(note: Container, actor: Actor, reply_to: str | None = None, sent: dict | None = None) -> dict:
    """What a caller is told of a note written: its DID, how a public one left (``sent``:
    net.mesh_publish), and for the agent's answer to the person, the conversation it went into."""
    out = {"did": note.did}
    if sent is not None:
        out["sent"] = sent
    if reply_to is not None and actor.kind == "agent":
        out.update(thread=chat.thread_name(None, note.payload.get("topic")), in_reply_to=reply_to)
    return out


async def spread(app: App, note: Container, written_ms: int) -> dict | None:
    """What follows a note's write on a running node: a public one published (gossip, or a direct
    push when too large for gossip: how, returned), the reactor's look."""
    sent = None
    if app.mesh is not None and note.payload.get("audience") == "public":
        app.mesh.timing.mark(note.did, "written", app.clock(), written_ms)
        sent = await app.mesh.publish(note)
    elif app.mesh is not None and note.head.get("recipient"):  # a friends note: to the friends online now
        await app.mesh.deliver(note)
    if app.reactor is not None:
        app.reactor.poke()
    return sent


async def notes(app: App, actor: Actor, limit: int = 20, before: str | None = None, query: str | None = None,
                unread: bool | None = None, source: str | None = None, topic: str | None = None) -> list[dict]:
    """A page of notes, newest first, each saying who asked for it (``asked_kind``, ``asked_via``...;
    filters: Database.recent_notes); ``author_name``: what the author is called here (store.names)."""
    def read(db) -> list[dict]:
        rows = db.recent_notes(int(limit), before=before, query=query, unread=unread, source=source, topic=topic)
        shown = store_names.named(db, {r["author_did"] for r in rows})
        return [{**r, "author_name": shown.get(r["author_did"], r["author_name"])} for r in rows]

    return await app.store.read(read)


async def note_read(app: App, actor: Actor, did: str) -> dict:
    """A note in full, marked read."""
    return await app.store.write(knowledge.read_note, str(did))


async def note_show(app: App, actor: Actor, did: str) -> dict:
    """A note in full, as it is: looking at it does not mark it read (``note_read`` does)."""
    return await app.store.read(knowledge.show_note, str(did))


async def note_tag(app: App, actor: Actor, did: str, add: list | None = None, remove: list | None = None) -> list[str]:
    """Add and remove a note's local tags (never signed nor forwarded); its tags after."""
    return await app.store.write(knowledge.tag_note, str(did), [str(t) for t in add or []],
                                 [str(t) for t in remove or []])
