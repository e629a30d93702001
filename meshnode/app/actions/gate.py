"""The person's side of the action gate: review the agent's drafts and commit them, roll back to a
snapshot, answer its confirmation requests, give it a fresh budget of tool calls; and what the
gate lets the agent do (its tools, ``app.tools``, and its sends out of the node).

Every decision is the person's alone, recorded with the face they came through (``actor.via``)
as the decider; the agent learns of it at its next tick (records.gate.person writes the row its
context 4 shows). Listing the drafts is the person's too: it records what they were shown, and
an accept takes only that. The drafts and snapshots live in the agent's workspace, the gate's
jail (``app.jail``: the node's own, or one built on the home when no node runs).
"""

from __future__ import annotations

import base64
import binascii

from meshnode.app.actor import Actor, decided_by
from meshnode.app.context import App
from meshnode.base.config.gate import OUTBOUND, OUTBOUND_KINDS
from meshnode.base.errors import GateError, MeshnodeError
from meshnode.records.gate import confirm, drafts, person, snapshots


def _jail(app: App):
    if app.jail is None:
        raise MeshnodeError("gate_off", "the agent's workspace is not available here")
    return app.jail


async def drafts_listing(app: App, actor: Actor, rejected: bool = False) -> dict:
    """The agent's open drafts with their diffs (and what its reflection said); records what was
    shown, so an accept takes only that."""
    decided_by(actor, "reviews the agent's drafts")
    return await app.store.write(drafts.listing, _jail(app), person.SESSION, rejected=bool(rejected))


async def drafts_decide(app: App, actor: Actor, decision: str, paths: list | None = None,
                        all_or_nothing: bool = False) -> dict:
    """Accept or reject the drafts of ``paths`` (None: all it applies to); ``all_or_nothing``:
    refuse the whole decision when one draft changed since it was listed (records.gate.person.decide)."""
    by = decided_by(actor, "decides on the agent's drafts")
    return await app.store.write(person.decide, _jail(app), decision, paths, by, all_or_nothing=bool(all_or_nothing))


async def drafts_edit(app: App, actor: Actor, path: str, content: str | None = None,
                      content_base64: str | None = None) -> dict:
    """The person's own content for an open draft (its status stays): text, or any bytes in base64."""
    by = decided_by(actor, "edits the agent's drafts")
    if (content is None) == (content_base64 is None):
        raise GateError("bad_arguments", "give the draft's new content, as text or in base64 (one of them)")
    if content_base64 is not None:
        try:
            content = base64.b64decode(content_base64, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise GateError("bad_arguments", "content_base64 is not base64") from None
    return await app.store.write(person.edit, _jail(app), path, content, by)


async def drafts_commit(app: App, actor: Actor, message: str = "reviewed and accepted") -> dict:
    """Write the accepted drafts, all or nothing, after a snapshot: ``{snapshot}``, its id."""
    by = decided_by(actor, "commits the agent's drafts")
    return {"snapshot": await app.store.write(person.commit, _jail(app), message, by)}


async def snapshots_listing(app: App, actor: Actor, limit: int = 50) -> list:
    """The snapshots taken before commits, newest first."""
    return await app.store.read(snapshots.listing, int(limit))


async def snapshot_show(app: App, actor: Actor, id: int) -> dict:
    """One snapshot: its files and state."""
    return await app.store.read(snapshots.show, int(id))


async def snapshot_rollback(app: App, actor: Actor, id: int) -> dict:
    """Restore the files as snapshot ``id`` has them: ``{restored, before}`` (the state before is a
    new snapshot)."""
    by = decided_by(actor, "rolls the workspace back")
    return {"restored": int(id), "before": await app.store.write(person.rollback, _jail(app), int(id), by)}


async def confirmations(app: App, actor: Actor, all: bool = False, limit: int = 50) -> list:
    """The agent's requests for the person's confirmation, newest first (those past their time are
    marked expired first: a write)."""
    return await app.store.write(confirm.listing, app.clock(), None if all else "pending", int(limit))


async def confirm_decide(app: App, actor: Actor, id: int, approve: bool) -> dict:
    """Approve or reject a request; a running node acts on it at its next tick."""
    by = decided_by(actor, "answers the agent's confirmation requests")
    if not isinstance(approve, bool):
        raise GateError("bad_arguments", "approve is true or false")
    return await app.store.write(person.answer, int(id), bool(approve), app.clock(), by)


async def gate_reset_limit(app: App, actor: Actor) -> dict:
    """A fresh budget of tool calls for the agent, from its next tick."""
    by = decided_by(actor, "resets the agent's budget of tool calls")
    return await app.store.write(person.reset_limit, app.clock(), by)


async def gate_tools(app: App, actor: Actor) -> dict:
    """The tools with their risk levels, and which sends out of the node ask a person first
    (``[gate] outbound_confirm``)."""
    asks = app.config.values["gate"]["outbound_confirm"]
    return {"tools": [{"name": t.name, "risk": t.risk, "summary": t.summary, "parameters": t.parameters}
                      for t in app.tools.values()],
            "outbound": [{"kind": kind, "risk": OUTBOUND, "what": what, "command": command,
                          "asks_first": kind in asks} for kind, (what, command) in OUTBOUND_KINDS.items()]}
