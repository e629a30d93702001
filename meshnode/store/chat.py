"""Conversations with the agent: threads of private notes (protocols/web.md 7).

A person's message is a private note of this node with ``source`` ``user``
(the web) or ``cli``; the agent's reply is its ``note_add`` with ``reply_to``:
a note with ``related.in_reply_to`` and the thread's topic. A thread is named
by ``tid``, 16 characters of its first message's DID after the fixed prefix.
That DID is only known once the first note is signed, so the first message
carries the topic ``chat`` and every later one (either side) ``chat:<tid>``;
the reads below put the two together. Reads run in the store's reader thread; writing a
message is the application layer's (``meshnode.app.actions.chat``, and ``note_add`` with
``reply_to`` for the agent's answer).

A thread's own state is a row of ``chat_threads`` (its title when the person renamed it, archived,
deleted: ``chat_control``); a message the LLM was shown in a prompt has a row of ``chat_prompted``
(how many prompts, which ticks): "seen by the agent" is that row, "answered" a reply to it.
"""

from __future__ import annotations

import re

import trio

from meshnode.base.errors import MeshnodeError
from meshnode.store import speakers
from meshnode.store.database import Database
from meshnode.store.short_ids import CONTAINER_HEAD

PREFIX = CONTAINER_HEAD  # every container DID starts so: a tid is the 16 characters after it
TID_LEN = 16
FIRST = "chat"  # the topic of a thread's first message
PERSON = ("user", "cli")
TITLE_CHARS = 80
PREVIEW_CHARS = 200
MAX_WAIT_S = 60.0  # the longest a caller may wait for the agent's reply (under control.HANDLER_TIMEOUT)
_TID = re.compile(r"[A-Za-z0-9_-]{16}")
# the thread of a note row ``n``, and the rows that belong to some thread (both use reactor_notes_by_topic)
THREAD_OF = (f"CASE WHEN n.topic = '{FIRST}' THEN 'chat:' || substr(n.container_did, {len(PREFIX) + 1}, {TID_LEN})"
             " ELSE n.topic END")
IN_CHAT = f"(n.topic = '{FIRST}' OR (n.topic >= 'chat:' AND n.topic < 'chat;'))"
IN_THREAD = (f"(n.topic = 'chat:' || :tid OR (n.topic = '{FIRST}'"
              f" AND substr(n.container_did, 1, {len(PREFIX) + TID_LEN}) = '{PREFIX}' || :tid))")
_ROWS = ("SELECT n.container_did, n.source, n.text, c.timestamp_ms, n.read, n.id FROM notes n"
         " JOIN containers c ON c.did = n.container_did")
# the tid of a note row ``n`` in a conversation (its thread key without "chat:")
TID_OF = (f"CASE WHEN n.topic = '{FIRST}' THEN substr(n.container_did, {len(PREFIX) + 1}, {TID_LEN})"
          " WHEN n.topic >= 'chat:' AND n.topic < 'chat;' THEN substr(n.topic, 6) END")
# a note row ``n`` whose thread the person archived or deleted: out of the agent's prompt
SET_ASIDE = (f"EXISTS (SELECT 1 FROM chat_threads ct WHERE ct.tid = {TID_OF} AND (ct.archived_ms IS NOT NULL"
             " OR ct.deleted_ms IS NOT NULL))")
REMINDER_AFTER = 3  # prompts an unanswered message is shown in full; after them a one-line reminder
WORDS = 60  # characters of a replied message shown beside its reply


class ChatError(MeshnodeError):
    """A message that cannot be sent or read as asked."""


def tid_of(did: str) -> str:
    return did[len(PREFIX):len(PREFIX) + TID_LEN] if did.startswith(PREFIX) else did[-TID_LEN:]


def thread_topic(did: str | None, topic: str | None) -> str | None:
    """The topic a reply to note ``did`` (whose topic is ``topic``) takes: its thread's (a note with
    no DID, from before containers, names no thread)."""
    return f"chat:{tid_of(did)}" if topic == FIRST and did else topic


def thread_name(did: str | None, topic: str | None) -> str | None:
    """The tid of the thread a note is in (None outside conversations)."""
    t = thread_topic(did, topic)
    return t[len("chat:"):] if t and t.startswith("chat:") else None


def side(source: str) -> str:
    return "person" if source in PERSON else "agent"


def check_tid(tid: str) -> str:
    if not isinstance(tid, str) or not _TID.fullmatch(tid):
        raise ChatError("bad_thread", f"a thread id is {TID_LEN} characters of a note's DID (A-Z a-z 0-9 _ -)")
    return tid


def threads(db: Database, own_did: str, limit: int = 50, before: int | None = None,
            archived: bool = False) -> list[dict]:
    """This node's conversations, the most recently active first; ``before``: a ``last_ms`` cursor
    (a full page takes in the threads tied with its last one, so the next page loses none). The
    archived ones apart (``archived``); a deleted one nowhere (its notes are hidden)."""
    q = db.conn.execute
    sql = (f"SELECT key, count(*), max(ts), sum(unread) FROM (SELECT {THREAD_OF} AS key, c.timestamp_ms AS ts,"
           " (n.source IN ('user', 'cli') AND n.read = 0) AS unread FROM notes n"
           f" JOIN containers c ON c.did = n.container_did WHERE {IN_CHAT} AND n.hidden = 0 AND n.agent_did = ?)"
           " GROUP BY key HAVING max(ts) < ? AND max(ts) >= ? AND coalesce((SELECT ct.archived_ms IS NOT NULL"
           " OR ct.deleted_ms IS NOT NULL FROM chat_threads ct WHERE ct.tid = substr(key, 6)), 0) = ?"
           " ORDER BY max(ts) DESC, key LIMIT ?")
    before = before if before is not None else 2**62
    limit = max(1, min(int(limit), 500))
    rows = q(sql, (own_did, before, -2**62, int(bool(archived)), limit)).fetchall()
    if len(rows) == limit:  # the next page starts before the last time: the threads tied with it come now
        page = {r[0] for r in rows}
        rows += [r for r in q(sql, (own_did, before, rows[-1][2], int(bool(archived)), -1)).fetchall()
                 if r[0] not in page]
    out = []
    for key, count, last_ms, unread in rows:
        tid = key[len("chat:"):]
        where = f" WHERE {IN_THREAD} AND n.hidden = 0 AND n.agent_did = :own ORDER BY c.timestamp_ms"
        first = q(_ROWS + where + ", n.id LIMIT 1", {"tid": tid, "own": own_did}).fetchone()
        last = q(_ROWS + where + " DESC, n.id DESC LIMIT 1", {"tid": tid, "own": own_did}).fetchone()
        own = state_of(db, tid)
        out.append({"thread": tid, "title": own["title"] or first[2][:TITLE_CHARS], "last_side": side(last[1]),
                    "last_text": last[2][:PREVIEW_CHARS], "last_ms": last_ms, "unread_by_agent": unread or 0,
                    "count": count, "archived": own["archived"]})
    return out


def state_of(db: Database, tid: str) -> dict:
    """The person's choices for thread ``tid``: {title (None: its first words), archived, deleted}."""
    row = db.conn.execute("SELECT title, archived_ms, deleted_ms FROM chat_threads WHERE tid = ?", (tid,)).fetchone()
    title, archived, deleted = row if row is not None else (None, None, None)
    return {"title": title, "archived": archived is not None, "deleted": deleted is not None}


def speaker_side(who: speakers.Speaker) -> str:
    """Where a message shows in its thread: the person's, the agent's (this node's own notes), or
    another party's (an A2A party, a peer), by its provenance row."""
    if who.kind == "person":
        return "person"
    return "party" if who.kind in ("a2a", "peer") else "agent"


def _words(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= WORDS else flat[:WORDS - 1] + "…"


def thread(db: Database, own_did: str, tid: str, limit: int = 100, before: int | None = None) -> dict:
    """One conversation's messages, oldest first (the newest ``limit`` before ``before``, a ``time_ms``,
    and those tied with the oldest of them: one tick's replies share a time)."""
    check_tid(tid)
    sql = (_ROWS + f" WHERE {IN_THREAD} AND n.hidden = 0 AND n.agent_did = :own AND c.timestamp_ms < :before"
           " AND c.timestamp_ms >= :floor ORDER BY c.timestamp_ms DESC, n.id DESC LIMIT :limit")
    args = {"tid": tid, "own": own_did, "before": before if before is not None else 2**62, "floor": -2**62,
            "limit": max(1, min(int(limit), 500))}
    rows = db.conn.execute(sql, args).fetchall()
    if len(rows) == args["limit"]:  # the next page starts before the oldest time: its ties come now
        page = {r[5] for r in rows}
        rows += [r for r in db.conn.execute(sql, {**args, "floor": rows[-1][3], "limit": -1}) if r[5] not in page]
    rows = rows[::-1]
    if not rows and before is None:
        raise ChatError("thread_not_found", f"no conversation {tid} on this node")
    replies: dict[str, list[str]] = {}
    answered: dict[str, int] = {}
    who: dict[str, speakers.Speaker] = {}
    seen: dict[str, dict] = {}
    if rows:
        dids = [r[0] for r in rows]
        marks = ",".join("?" * len(rows))
        for source, target in db.conn.execute(
                f"SELECT source_did, target_did FROM container_links WHERE relation = 'in_reply_to'"
                f" AND source_did IN ({marks})", dids):
            replies.setdefault(source, []).append(target)
        for target, n in db.conn.execute(
                "SELECT l.target_did, count(*) FROM container_links l JOIN notes n ON n.container_did = l.source_did"
                f" WHERE l.relation = 'in_reply_to' AND n.hidden = 0 AND l.target_did IN ({marks})"
                " GROUP BY l.target_did", dids):
            answered[target] = n
        for did, *row in db.conn.execute(f"SELECT n.container_did, {speakers.COLUMNS} FROM notes n {speakers.JOIN}"
                                         f" WHERE n.container_did IN ({marks})", dids):
            who[did] = speakers.of_row(own_did, row)
        for did, times, first, last in db.conn.execute(
                f"SELECT container_did, times, first_tick, last_tick FROM chat_prompted WHERE container_did IN ({marks})",
                dids):
            seen[did] = {"prompts": times, "first_tick": first, "last_tick": last}
    targets = sorted({t for ts in replies.values() for t in ts})
    quoted = _replied(db, own_did, targets)
    own = state_of(db, tid)

    def message(did, source, text, ms, read) -> dict:
        speaker = who.get(did) or speakers.Speaker("unrecorded")
        return {"did": did, "side": speaker_side(speaker), "from": speaker.kind, "name": speaker.label,
                "who": speaker.words(), "text": text, "time_ms": ms, "read": bool(read),
                "seen": seen.get(did), "answered": answered.get(did, 0),
                "in_reply_to": replies.get(did, []),
                "replying_to": [quoted[t] for t in replies.get(did, []) if t in quoted]}

    return {"thread": tid, "title": own["title"] or (rows[0][2][:TITLE_CHARS] if rows else ""),
            "renamed": own["title"] is not None, "archived": own["archived"],
            "messages": [message(did, source, text, ms, read) for did, source, text, ms, read, _ in rows]}


def _replied(db: Database, own_did: str, dids: list[str]) -> dict[str, dict]:
    """What a reply answers, in words: {did: {did, side, who, words}} (the replied message's sender
    and first words, instead of its hash)."""
    if not dids:
        return {}
    marks = ",".join("?" * len(dids))
    out = {}
    for did, text, *row in db.conn.execute(f"SELECT n.container_did, n.text, {speakers.COLUMNS} FROM notes n"
                                           f" {speakers.JOIN} WHERE n.container_did IN ({marks})", dids):
        speaker = speakers.of_row(own_did, row)
        out[did] = {"did": did, "side": speaker_side(speaker), "who": speaker.words(), "words": _words(text or "")}
    return out


def thread_exists(db: Database, own_did: str, tid: str) -> bool:
    return db.conn.execute(f"SELECT 1 FROM notes n WHERE {IN_THREAD} AND n.agent_did = :own LIMIT 1",
                           {"tid": tid, "own": own_did}).fetchone() is not None


def person_note(db: Database, own_did: str, did: str) -> tuple[str, str | None] | None:
    """(did, topic) of a message the agent may answer with ``reply_to`` (None: no such note): one of
    this node's conversations, from the person or an A2A party by its provenance row (the party reads
    the answer as its task's); never a note with no record of who asked for it."""
    return db.conn.execute(
        "SELECT n.container_did, n.topic FROM notes n JOIN provenance pr ON pr.container_did = n.container_did"
        " WHERE n.container_did = ? AND pr.kind IN ('person', 'a2a') AND n.agent_did = ?", (did, own_did)).fetchone()


def replies_to(db: Database, own_did: str, did: str) -> list[dict]:
    """The agent's replies to the person's message ``did``, oldest first."""
    rows = db.conn.execute(
        "SELECT n.container_did, n.text, c.timestamp_ms FROM container_links l JOIN notes n ON n.container_did ="
        " l.source_did JOIN containers c ON c.did = n.container_did WHERE l.relation = 'in_reply_to' AND"
        " l.target_did = ? AND n.agent_did = ? AND n.source NOT IN ('user', 'cli') ORDER BY c.timestamp_ms, n.id",
        (did, own_did)).fetchall()
    return [{"did": d, "text": text, "time_ms": ms} for d, text, ms in rows]


async def wait_for_reply(store, own_did: str, did: str, seconds: float) -> list[dict]:
    """The agent's replies to ``did`` once there is one, or [] after ``seconds`` (the agent answers on its
    next tick; the store is read at growing intervals, 50 ms to 1 s, so a long wait costs little)."""
    pause = 0.05
    with trio.move_on_after(min(float(seconds), MAX_WAIT_S)):
        while True:
            found = await store.read(replies_to, own_did, did)
            if found:
                return found
            await trio.sleep(pause)
            pause = min(pause * 2, 1.0)
    return []


def unread_for_context(db: Database, own_did: str | None, kind: str = "person", limit: int = 10) -> list[tuple]:
    """The unread messages of this node's conversations whose provenance row is of ``kind`` (person:
    context 6a; a2a: 6b), newest first, but none of a thread the person archived or deleted:
    (did, topic, text, timestamp_ms, prompts it was shown in, *speakers.COLUMNS)."""
    mine = " AND n.agent_did = ?" if own_did else ""
    return db.conn.execute(f"SELECT n.container_did, n.topic, n.text, c.timestamp_ms, coalesce(cp.times, 0),"
                           f" {speakers.COLUMNS} FROM notes n JOIN containers c ON c.did = n.container_did"
                           f" {speakers.JOIN} LEFT JOIN chat_prompted cp ON cp.container_did = n.container_did"
                           f" WHERE pr.kind = ? AND n.read = 0 AND n.hidden = 0{mine} AND NOT {SET_ASIDE}"
                           " ORDER BY c.timestamp_ms DESC, n.id DESC LIMIT ?",
                           (kind,) + ((own_did,) if own_did else ()) + (limit,)).fetchall()


def unread_count(db: Database, own_did: str | None, kind: str) -> int:
    """How many unread messages of ``kind`` (as ``unread_for_context``) there are."""
    mine = " AND n.agent_did = ?" if own_did else ""
    return db.conn.execute(f"SELECT count(*) FROM notes n {speakers.JOIN} WHERE pr.kind = ? AND n.read = 0"
                           f" AND n.hidden = 0{mine} AND NOT {SET_ASIDE}",
                           (kind,) + ((own_did,) if own_did else ())).fetchone()[0]


def earlier(db: Database, own_did: str | None, tid: str, before_ms: int, n: int = 2) -> list[tuple]:
    """The ``n`` messages of thread ``tid`` before ``before_ms``, oldest first: (text, timestamp_ms,
    *speakers.COLUMNS)."""
    mine = " AND n.agent_did = :own" if own_did else ""
    rows = db.conn.execute(f"SELECT n.text, c.timestamp_ms, {speakers.COLUMNS} FROM notes n JOIN containers c ON"
                           f" c.did = n.container_did {speakers.JOIN} WHERE {IN_THREAD} AND n.hidden = 0{mine}"
                           " AND c.timestamp_ms < :before ORDER BY c.timestamp_ms DESC, n.id DESC LIMIT :n",
                           {"tid": tid, "own": own_did, "before": before_ms, "n": n}).fetchall()
    return rows[::-1]


def reply_topic(db: Database, did: str) -> str | None:
    """The topic a note answering ``did`` (any note held here) takes: its thread's (``note add --reply-to``)."""
    row = db.conn.execute("SELECT container_did, topic FROM notes WHERE container_did = ?", (did,)).fetchone()
    if row is None:
        raise ChatError("not_found", f"no note {did[:80]} on this node to reply to")
    return thread_topic(*row)
