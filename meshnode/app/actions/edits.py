"""Changing or withdrawing knowledge and notes: a new version, a signed retraction, or a note
hidden here (meshnode.records.knowledge_edits says why); a new version of a public note is gossiped."""

from __future__ import annotations

from meshnode.records import knowledge_edits
from meshnode.app.actions.notes import spread
from meshnode.app.actor import Actor
from meshnode.app.context import App


def _texts(items: list | None) -> list[str]:
    return [str(x) for x in (items or [])]


async def edit(app: App, actor: Actor, op: str, id: str, label: str | None = None, description: str | None = None,
               aliases: list | None = None, tags: list | None = None, relation: str | None = None,
               targets: list | None = None, inverse: str | None = None, text: str | None = None,
               restore: bool = False) -> dict:
    """One edit by name (``knowledge_edits.apply``'s ``op``), recorded as asked by ``actor``."""
    fields = {"label": label, "description": description, "relation": relation, "inverse": inverse, "text": text,
              "restore": bool(restore),
              **{k: _texts(v) for k, v in (("aliases", aliases), ("tags", tags), ("targets", targets)) if v is not None}}
    t = app.clock()
    result = await app.store.write(lambda db: knowledge_edits.apply(db, app.key, op, id, now_ms=t,
                                                                    asked_by=actor.row(), **fields))
    if op == "note_update":
        note = await app.store.read(lambda db: db.load_container(result["did"], now_ms=app.clock()))
        if note is not None:
            await spread(app, note, t)
    return result
