"""The agent's commands that change or withdraw knowledge and notes: ``concept_update``,
``link_update``, ``diary_delete``, ``concept_delete``, ``link_delete``, ``note_update``,
``note_delete``. Containers are immutable: an update is a new version, a delete of
knowledge is a signed retraction of one's own, a delete of a note hides it here
(``meshnode.records.knowledge_edits`` says why).
"""

from __future__ import annotations

from meshnode.records import knowledge_edits as edits
from meshnode.app.actor import AGENT
from meshnode.base.errors import MeshnodeError

AGENT_ROW = AGENT.row()  # who asks for the agent's edits (store.provenance)


def _concept_update(db, key, now, args):
    return edits.update_concept(db, key, args["id"], now_ms=now, label=args.get("label"),
                                description=args.get("description"), aliases=args.get("aliases"),
                                tags=args.get("tags"), asked_by=AGENT_ROW)


def _link_update(db, key, now, args):
    return edits.update_link(db, key, args["id"], now_ms=now, relation=args.get("relation"),
                             targets=args.get("targets"), inverse=args.get("inverse"), asked_by=AGENT_ROW)


def _retract(kind: str):
    def run(db, key, now, args):
        return edits.retract(db, key, kind, args["id"], now_ms=now, asked_by=AGENT_ROW)
    return run


def _agents_own_note(db, note_did: str, *, private: bool) -> None:
    """The person's notes, the node's notices to the person (gate requests, crash reports) and
    others' mail are signed with the same key or arrive here, but they are not the agent's to
    rewrite or hide. A new version of a shared note would leave the node again past the gate's
    outbound level, so the agent updates only its private notes (a new note_add is checked)."""
    row = db.conn.execute("SELECT source, audience FROM notes WHERE container_did = ?", (note_did,)).fetchone()
    if row is None:
        raise MeshnodeError("not_found", f"no note {str(note_did)[:128]} on this node")
    if row[0] not in ("llm", "llm:task"):
        raise MeshnodeError("refused", "only notes you wrote yourself (source llm) are yours to change or hide")
    if private and row[1] != "private":
        raise MeshnodeError("refused", f"that note went to {row[1]}: write a new note_add instead (it asks the"
                                       " person where the gate says so)")


def _note_update(db, key, now, args):
    _agents_own_note(db, args["id"], private=True)
    return edits.update_note(db, key, args["id"], args["text"], now_ms=now, asked_by=AGENT_ROW)


def _note_delete(db, key, now, args):
    _agents_own_note(db, args["id"], private=False)
    return edits.hide_note(db, args["id"])


HANDLERS = {
    "concept_update": _concept_update,
    "link_update": _link_update,
    "note_update": _note_update,
    "note_delete": _note_delete,
    "diary_delete": _retract("diary"),
    "concept_delete": _retract("concept"),
    "link_delete": _retract("link"),
}
