"""The person's inbox: everything that waits for them, newest first (``inbox``), how many
(``inbox_count``, for every page load), and a decision on one item (``inbox_decide``).

The inbox decides nothing of its own: ``inbox_decide`` maps an item's kind and decision onto the
action that already decides it (``confirm_decide``, ``mind_release``/``mind_drop``,
``drafts_decide``/``drafts_commit``, ``note_read``, ``task_update`` for an unclaimed task), called
with the same actor, so the checks, records and effects are those of the CLI's ``meshnode confirm
approve`` and the rest (a ``notice``, the reactor's line while the agent cannot think, is only ever
decided here: read). All three are the person's alone: the list holds outsiders' held messages and records which drafts the
person was shown (an accept takes only what was shown).
"""

from __future__ import annotations

import re

from meshnode.app.actions import gate, gmp, mind, notes
from meshnode.app.actor import Actor, decided_by
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.records import inbox as records
from meshnode.records.a2a import held_queue
from meshnode.records.gate import drafts, person
from meshnode.records.reactor import person_lines
from meshnode.store import chat

_REF = re.compile(r"^[0-9]{1,18}$")


def _reviewed(db, jail) -> list[dict] | None:
    """The agent's open drafts with their diffs, recorded as shown to the person (None: no workspace here)."""
    return drafts.review(db, jail, person.SESSION, shown_to_person=True) if jail is not None else None


def _listing(db, jail, own_did, now_ms, thread, limit) -> list[dict]:
    return records.items(db, own_did, now_ms, _reviewed(db, jail), thread=thread, limit=limit)


async def inbox(app: App, actor: Actor, thread: str | None = None, limit: int = records.MAX_ITEMS) -> dict:
    """What waits for the person, newest first: ``{items, count}`` (each item: kind, id, who,
    summary, when_ms, thread, context_id, detail, actions); ``thread``: only that chat thread's."""
    decided_by(actor, "reads their inbox")
    if thread is not None:
        chat.check_tid(thread)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= records.MAX_ITEMS:
        raise MeshnodeError("bad_arguments", f"limit is a number from 1 to {records.MAX_ITEMS}")
    own = app.key.did if app.key is not None else None
    now = app.clock()
    if thread is None:  # the drafts are listed, and recorded as shown to the person: a write
        items = await app.store.write(_listing, app.jail, own, now, None, limit)
    else:  # a conversation's items (drafts belong to none): a read
        items = await app.store.read(records.items, own, now, None, thread=thread, limit=limit)
    return {"items": items, "count": await app.store.read(records.count, now, own)}


async def inbox_count(app: App, actor: Actor) -> dict:
    """How many items wait: ``{total, by_kind}`` (a few indexed counts)."""
    decided_by(actor, "reads their inbox")
    return await app.store.read(records.count, app.clock(), _own(app))


def _own(app: App) -> str | None:
    return app.key.did if app.key is not None else None


def _number(ref) -> int:
    if isinstance(ref, bool) or not (isinstance(ref, int) or (isinstance(ref, str) and _REF.match(ref))):
        raise MeshnodeError("bad_arguments", "this item's ref is its number")
    return int(ref)


async def _confirm(app: App, actor: Actor, ref, decision: str, session_a2a: bool) -> dict:
    number = _number(ref)
    row = await app.store.read(lambda db: db.conn.execute(
        "SELECT session FROM gate_confirmations WHERE id = ?", (number,)).fetchone())
    if row is None:
        raise MeshnodeError("not_found", f"no confirmation request {number}")
    if (row[0] == held_queue.SESSION) != session_a2a:
        what = "a held A2A message" if session_a2a else "one of the agent's requests"
        raise MeshnodeError("bad_arguments", f"request {number} is not {what}")
    return await gate.confirm_decide(app, actor, number, decision == "approve")


async def inbox_decide(app: App, actor: Actor, kind: str, ref: str | int, decision: str) -> dict:
    """Decide one item through the action that decides it (see the module's docstring): ``kind``
    and ``ref`` as the inbox lists them, ``decision`` one of the item's ``actions``. Returns that
    action's answer as ``result``, and the count after it."""
    decided_by(actor, "decides what waits in their inbox")
    if kind not in records.ACTIONS:
        raise MeshnodeError("bad_arguments", f"kind is one of {', '.join(records.KINDS)}")
    allowed = [name for name, _, _ in records.ACTIONS[kind]]
    if decision not in allowed:
        raise MeshnodeError("bad_arguments", f"a {kind} takes {' or '.join(allowed)}")
    if kind in ("confirmation", "a2a_message"):
        result = await _confirm(app, actor, ref, decision, kind == "a2a_message")
    elif kind == "held_command":
        fn = mind.mind_release if decision == "release" else mind.mind_drop
        result = await fn(app, actor, [_number(ref)])
    elif kind == "draft":
        if not isinstance(ref, str) or not ref or len(ref) > 4096:
            raise MeshnodeError("bad_arguments", "a draft's ref is its path, as the inbox lists it")
        result = await gate.drafts_decide(app, actor, decision, [ref], all_or_nothing=True)
    elif kind == "drafts_accepted":
        result = await gate.drafts_commit(app, actor, "accepted in the inbox")
    elif kind == "notice":  # a line of its own (no action decides it elsewhere): read
        result = await app.store.write(person_lines.mark_read, _number(ref), app.clock())
    elif kind == "task_unclaimed":  # abandon: the task's creator's own move (gmp.md 3.2)
        if not isinstance(ref, str) or not ref.startswith("did:") or len(ref) > 200:
            raise MeshnodeError("bad_arguments", "an unclaimed task's ref is its lineage DID")
        result = await gmp.task_update(app, actor, ref, status="abandoned")
    else:  # escalation: its note, read
        if not isinstance(ref, str) or not ref.startswith("did:") or len(ref) > 200:
            raise MeshnodeError("bad_arguments", "an escalation's ref is its note's DID")
        note = await notes.note_read(app, actor, ref)
        result = {"read": note.get("did", ref) if isinstance(note, dict) else ref}
    return {"kind": kind, "ref": ref, "decision": decision, "result": result,
            "count": await app.store.read(records.count, app.clock(), _own(app))}
