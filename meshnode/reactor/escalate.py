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

from meshnode.errors import MeshnodeError
from meshnode.notes import make_note, own_local

log = logging.getLogger("meshnode.reactor")

TOPIC = "reactor-escalation"
OPERATOR = "operator"
MAX_TEXT = 1000


def note_text(esc) -> str:
    """The escalation's text (capped), its dedupe line and hashtags: what a reader and a reactor need."""
    return f"{esc.text[:MAX_TEXT].rstrip()}\n\ndedupe: {esc.key}\n#reactor #escalation"


def build(key, esc, now_ms: int):
    """The signed note for ``esc`` and the local fields it is stored with."""
    if esc.to_id == OPERATOR:
        note = make_note(key, note_text(esc), now_ms=now_ms, topic=TOPIC, source="system", audience="private",
                         priority=2)
        return note, {"tags": ["reactor", "escalation"]}  # unread: it is the person's mail
    note = make_note(key, note_text(esc), now_ms=now_ms, topic=TOPIC, source="system", audience="friends",
                     priority=1, recipients=[esc.to_id])
    return note, own_local("reactor", "escalation")


async def send(store, key, esc, now_ms: int, *, mesh=None,
               relay: Callable[[str, str], Awaitable[object]] | None = None, metrics=None) -> str:
    """Store the escalation's note and, for a mentor DID, push it to that peer only: through
    ``mesh`` in the node, else through ``relay(did, base64 container)`` (the running node's
    ``send`` control command, for ``reactor scan --once``). A failed push is logged and counted;
    the note stays stored (sync may carry it later), and its id is returned either way."""
    note, local = build(key, esc, now_ms)
    await store.write(lambda db: db.put_container(note, received_at_ms=now_ms, local=local))
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
        log.warning("escalation %s to %s not pushed: %s (stored; sync may carry it)", esc.key, esc.to_id,
                    exc.reason)
        if metrics is not None:
            metrics.inc("reactor_escalations_unsent", reason=exc.code)
    return note.did
