"""Escalation notes (protocols/reactor.md 10.3): what the reactor sends when a wake left no trace.

To a mentor that is a DID: a signed ``friends`` note addressed to that DID only (``head.recipient``
names it and nobody else, so it is never gossiped), topic ``reactor-escalation``, its text ending
with a ``dedupe: <key>`` line (the mentor's reactor uses that key, so several reactors telling one
mentor about one failure wake it once) and the hashtags #reactor #escalation. It is stored here and
pushed to the mentor directly. To the operator (the person): a private local note from the system,
priority 2, tagged ``reactor``, which ``meshnode note list`` and ``reactor status`` show.
"""

from __future__ import annotations

import base64
import logging
from typing import Awaitable, Callable

from meshnode.base.errors import MeshnodeError
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import node
from meshnode.engines.reactor.types import group_escalations
from meshnode.store import names as store_names, short_ids

REACTOR = node("reactor")  # who asks for an escalation note
log = logging.getLogger("meshnode.engines.reactor")

TOPIC = "reactor-escalation"
OPERATOR = "operator"
MAX_TEXT = 1000


MAX_BATCH = 20  # escalations in one note (the receiving adapter reads up to 100 dedupe lines)


def note_text(batch, words: Callable[[str], str] | None = None) -> str:
    """Each escalation's text (capped) followed by its own dedupe line, then the hashtags once:
    what a reader and a reactor need (the mentor's reactor makes one event per dedupe line, which
    keeps its DIDs). ``words``: the text as the person reads it (``in_words``: names, short ids)."""
    if not isinstance(batch, (list, tuple)):
        batch = [batch]
    words = words or (lambda text: text)
    parts = [f"{words(esc.text[:MAX_TEXT]).rstrip()}\ndedupe: {esc.key}" for esc in batch]
    return "\n\n".join(parts) + "\n#reactor #escalation"


def in_words(db, own_did: str | None) -> Callable[[str], str]:
    """An escalation's text for the person: agents by what they are called here (store.names: the
    petname first; this node's own as "this node's agent"), containers by their short ids."""
    names = store_names.display_all(db, own_did)

    def agent(did: str) -> str:
        return "this node's agent" if did == own_did else names.get(did) or short_ids.short_agent_id(did)

    def words(text: str) -> str:
        text = short_ids.AGENT_DID.sub(lambda m: agent(m.group(0)), text)
        return short_ids.CONTAINER_DID.sub(lambda m: short_ids.short_container_id(m.group(0)), text)

    return words


def batches(escalations) -> list[list]:
    """One note per recipient and level (types.group_escalations), at most MAX_BATCH escalations each."""
    out = []
    for group in group_escalations(escalations):
        out.extend(group[i:i + MAX_BATCH] for i in range(0, len(group), MAX_BATCH))
    return out


def note_fields(batch, words: Callable[[str], str] | None = None) -> dict:
    """How the note for ``batch`` (escalations to one recipient at one level) is written
    (``app.actions.notes.write_note``'s arguments): private and unread for the operator (it is
    the person's mail, its text ``words``: names where DIDs were), else to the mentor alone (its
    DIDs kept: this node's petnames are never sent)."""
    if not isinstance(batch, (list, tuple)):
        batch = [batch]
    to_id = batch[0].to_id
    if to_id == OPERATOR:
        return {"text": note_text(batch, words), "topic": TOPIC, "audience": "private", "priority": 2,
                "tags": ["reactor", "escalation"], "read": False}
    return {"text": note_text(batch), "topic": TOPIC, "audience": "friends", "priority": 1, "recipients": [to_id],
            "tags": ["reactor", "escalation"]}


def _store_and_record(db, key, batch, keys: list[str], now_ms: int):
    """The note and its escalation rows' ``container_id`` in one transaction: a stop between the
    two (a restart sending the rows again as unsent) cannot make a second note."""
    words = in_words(db, key.did) if batch[0].to_id == OPERATOR else None
    fields = note_fields(batch, words)

    def record(conn, note) -> None:
        conn.executemany("UPDATE reactor_escalations SET container_id = ? WHERE key = ?",
                         [(note.did, k) for k in keys])

    return write_note(db, key, REACTOR, now_ms=now_ms, then=record, **fields)


async def send(store, key, batch, now_ms: int, *, mesh=None,
               relay: Callable[[str, str], Awaitable[object]] | None = None, metrics=None) -> str:
    """Store one note for ``batch`` (escalations to one recipient at one level) and, for a mentor
    DID, push it to that peer only: through ``mesh`` in the node, else through ``relay(did, base64
    container)`` (the running node's ``send`` control command, for ``reactor scan --once``). A failed
    push is logged and counted; the note stays stored (sync may carry it later), and its id is
    returned either way."""
    if not isinstance(batch, (list, tuple)):
        batch = [batch]
    esc = batch[0]
    note = await store.write(_store_and_record, key, batch, [e.key for e in batch], now_ms)
    if esc.to_id == OPERATOR:
        return note.did
    try:
        if mesh is not None:
            await mesh.push(esc.to_id, [note])
        elif relay is not None:
            await relay(esc.to_id, base64.b64encode(note.to_bytes()).decode())
        else:
            raise MeshnodeError("node_not_running", "no running node to push it")
    except MeshnodeError as exc:
        log.warning("escalation %s (%d in the note) to %s not pushed: %s (stored; sync may carry it)", esc.key,
                    len(batch), esc.to_id, exc.reason)
        if metrics is not None:
            metrics.inc("reactor_escalations_unsent", reason=exc.code)
    return note.did
