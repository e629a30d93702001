"""The conversation with the agent: a message into a thread (``chat_send``), waiting for the
agent's answer to it (MCP's and A2A's "ask the agent"), reading the threads (meshnode.store.chat)
with what the agent is doing about them (``agent_state``), and the person's hand on a thread:
rename, archive, delete (meshnode.store.chat_control)."""

from __future__ import annotations

from meshnode.store import chat, chat_control
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import Actor, decided_by
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


async def chat_threads(app: App, actor: Actor, limit: int = 50, before: int | None = None,
                       archived: bool = False) -> list:
    """The conversations with the agent, newest first (``archived``: the archived ones)."""
    return await app.store.read(chat.threads, app.key.did, int(limit), None if before is None else int(before),
                                bool(archived))


async def chat_thread(app: App, actor: Actor, thread: str, limit: int = 100, before: int | None = None) -> dict:
    """One conversation, oldest message first, and what the agent is doing (``agent``: ``agent_state``)."""
    out = await app.store.read(chat.thread, app.key.did, thread, int(limit), None if before is None else int(before))
    return {**out, "agent": agent_state(app)}


def agent_state(app: App) -> dict:
    """What a conversation can truthfully say of the agent now: its mode (``off`` without a cycle),
    paused (by whom), idle, the LLM's last error while it fails (``core_outage``), and ``asking``:
    the tick whose prompt is with the LLM now, with the messages and threads it shows."""
    cycle = app.cycle if app.live else None
    if cycle is None:
        return {"mode": "off", "paused": False, "paused_by": None, "idle": False, "last_error": None, "asking": None,
                "wake_on_message": bool(app.wake_on_message)}
    status = cycle.status()
    return {"mode": status["mode"], "paused": status["paused"], "paused_by": status["paused_by"],
            "idle": status["idle"], "last_error": status["last_error"], "asking": status.get("asking"),
            "llm_errors": {e["id"]: e["error"] for e in status.get("llms") or [] if e.get("error")},
            "wake_on_message": bool(app.wake_on_message)}


async def chat_thread_rename(app: App, actor: Actor, thread: str, title: str) -> dict:
    """Give a conversation its own title ("" gives it back its first words)."""
    decided_by(actor, "renames a conversation")
    return await app.store.write(chat_control.rename, app.key.did, thread, title, app.clock())


async def chat_thread_archive(app: App, actor: Actor, thread: str, archived: bool = True) -> dict:
    """Archive a conversation (``archived`` False: bring it back): it leaves the list and the agent's prompt."""
    decided_by(actor, "archives a conversation")
    if not isinstance(archived, bool):
        raise chat.ChatError("bad_request", "archived is true or false")
    return await app.store.write(chat_control.archive, app.key.did, thread, archived, app.clock())


async def chat_thread_delete(app: App, actor: Actor, thread: str) -> dict:
    """Delete a conversation: its messages hidden everywhere, out of the agent's prompt for good."""
    decided_by(actor, "deletes a conversation")
    return await app.store.write(chat_control.delete, app.key.did, thread, app.clock())
