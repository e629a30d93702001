"""The conversation with the agent: a message into a thread (``chat_send``), waiting for the
agent's answer to it (MCP's and A2A's "ask the agent"), and reading the threads (meshnode.store.chat)."""

from __future__ import annotations

from meshnode.store import chat
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.base.identity.keys import NodeKey


def compose(db, key: NodeKey, actor: Actor, text: str, thread: str | None, now_ms: int) -> dict:
    """A message to the agent, signed and stored (writer thread): a new thread, or one more
    message in ``thread``."""
    if thread is not None:
        chat.check_tid(thread)
        if not chat.thread_exists(db, key.did, thread):
            raise chat.ChatError("thread_not_found", f"no conversation {thread} on this node")
    note = write_note(db, key, actor, text, now_ms=now_ms, topic=f"chat:{thread}" if thread else chat.FIRST)
    return {"thread": thread or chat.tid_of(note.did), "did": note.did}


async def chat_send(app: App, actor: Actor, text: str, thread: str | None = None, wait_seconds: float = 0) -> dict:
    """Store the message; the reactor looks soon; with ``App.wake_on_message`` (``[web]
    wake_on_message``) the cycle ticks now, unless a person paused it (the message waits). With
    ``wait_seconds``, the agent's replies that came within it (``replies``)."""
    if isinstance(wait_seconds, bool) or not isinstance(wait_seconds, (int, float)) \
            or not 0 <= wait_seconds <= chat.MAX_WAIT_S:
        raise chat.ChatError("bad_request", f"wait_seconds is a number of seconds from 0 to {chat.MAX_WAIT_S:g}")
    out = await app.store.write(compose, app.key, actor, text, thread, app.clock())
    if app.reactor is not None:
        app.reactor.poke()
    cycle = app.cycle
    woke = bool(app.wake_on_message and cycle is not None and not cycle.paused)
    if woke:
        cycle.wake.set()
    out = {**out, "woke": woke}
    if wait_seconds:
        out["replies"] = await chat.wait_for_reply(app.store, app.key.did, out["did"], wait_seconds)
    return out


async def chat_threads(app: App, actor: Actor, limit: int = 50, before: int | None = None) -> list:
    """The conversations with the agent, newest first."""
    return await app.store.read(chat.threads, app.key.did, int(limit), None if before is None else int(before))


async def chat_thread(app: App, actor: Actor, thread: str, limit: int = 100, before: int | None = None) -> list:
    """One conversation, oldest message first."""
    return await app.store.read(chat.thread, app.key.did, thread, int(limit), None if before is None else int(before))
