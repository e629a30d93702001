"""What the person does to a conversation (rename, archive, delete) and what the cycle records
of one (which messages a prompt showed the LLM): the writes behind ``meshnode.store.chat``'s reads.
Each runs in the store's writer thread, in the caller's transaction.

Deleting a thread hides its notes (``notes.hidden``, as deleting a note on /knowledge does: the
signed containers stay, no view shows them) and marks them read, so nothing of it reaches a prompt
again; archiving keeps them, out of the thread list's first page and out of the prompt.
"""

from __future__ import annotations

from meshnode.store import chat
from meshnode.store.database import Database

MAX_TITLE = 200


def _known(db: Database, own_did: str, tid: str) -> None:
    chat.check_tid(tid)
    if not chat.thread_exists(db, own_did, tid):
        raise chat.ChatError("thread_not_found", f"no conversation {tid} on this node")


def _upsert(db: Database, tid: str, now_ms: int, **values) -> None:
    db.conn.execute("INSERT OR IGNORE INTO chat_threads (tid, updated_ms) VALUES (?, ?)", (tid, now_ms))
    for column, value in values.items():  # column names are this module's, never a caller's
        db.conn.execute(f"UPDATE chat_threads SET {column} = ?, updated_ms = ? WHERE tid = ?", (value, now_ms, tid))


def rename(db: Database, own_did: str, tid: str, title: str, now_ms: int) -> dict:
    """The thread's title (an empty one: back to its first words)."""
    _known(db, own_did, tid)
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        raise chat.ChatError("bad_title", f"a thread's title is text of at most {MAX_TITLE} characters")
    title = " ".join(title.split())
    with db.transaction():
        _upsert(db, tid, now_ms, title=title or None)
    return {"thread": tid, "title": title or None}


def archive(db: Database, own_did: str, tid: str, archived: bool, now_ms: int) -> dict:
    """Archive (or bring back) a thread: archived, it leaves the list's first page and the prompt."""
    _known(db, own_did, tid)
    with db.transaction():
        _upsert(db, tid, now_ms, archived_ms=now_ms if archived else None)
    return {"thread": tid, "archived": bool(archived)}


def delete(db: Database, own_did: str, tid: str, now_ms: int) -> dict:
    """Delete a thread: its notes hidden and read (no view, no prompt shows them again)."""
    _known(db, own_did, tid)
    with db.transaction():
        hidden = db.conn.execute(f"UPDATE notes SET hidden = 1, read = 1 WHERE container_did IN (SELECT n.container_did"
                                 f" FROM notes n WHERE {chat.IN_THREAD} AND n.agent_did = :own)",
                                 {"tid": tid, "own": own_did}).rowcount
        _upsert(db, tid, now_ms, deleted_ms=now_ms)
    return {"thread": tid, "deleted": True, "messages": hidden}


def record_prompted(db: Database, dids: list[str], tick: int, now_ms: int) -> int:
    """The LLM answered a prompt that showed these messages: one more prompt each."""
    if not dids:
        return 0
    with db.transaction():
        for did in dids:
            db.conn.execute("INSERT INTO chat_prompted (container_did, first_tick, last_tick, times, first_ms, last_ms)"
                            " VALUES (?, ?, ?, 1, ?, ?) ON CONFLICT (container_did) DO UPDATE SET"
                            " last_tick = excluded.last_tick, times = times + 1, last_ms = excluded.last_ms",
                            (did, tick, tick, now_ms, now_ms))
    return len(dids)
