"""The agent's commands that change or withdraw knowledge and notes: ``concept_update``,
``link_update``, ``diary_delete``, ``concept_delete``, ``link_delete``, ``note_update``,
``note_delete``. Containers are immutable: an update is a new version, a delete of
knowledge is a signed retraction of one's own, a delete of a note hides it here
(``meshnode.knowledge_edits`` says why). Registered on import.
"""

from __future__ import annotations

from meshnode import knowledge_edits as edits
from meshnode.cognition.executor_admin import admin_command
from meshnode.container.schema import did, list_of, text
from meshnode.errors import MeshnodeError

_LONG = 64 * 1024
_ID = {"id": (text(128), True)}


@admin_command("concept_update", "a new version of a concept: label, description, aliases or tags (others kept)",
               {"id": (text(128), True), "label": (text(256), False), "description": (text(_LONG), False),
                "aliases": (list_of(text(256), max_items=256), False),
                "tags": (list_of(text(64), max_items=64), False)})
def _concept_update(db, key, now, args):
    return edits.update_concept(db, key, args["id"], now_ms=now, label=args.get("label"),
                                description=args.get("description"), aliases=args.get("aliases"),
                                tags=args.get("tags"))


@admin_command("link_update", "a new version of a link: its relation, targets or inverse relation",
               {"id": (text(128), True), "relation": (text(64), False),
                "targets": (list_of(did, max_items=256, non_empty=True), False), "inverse": (text(64), False)})
def _link_update(db, key, now, args):
    return edits.update_link(db, key, args["id"], now_ms=now, relation=args.get("relation"),
                             targets=args.get("targets"), inverse=args.get("inverse"))


def _retract(kind: str):
    def run(db, key, now, args):
        return edits.retract(db, key, kind, args["id"], now_ms=now)
    return run


for _kind, _what in (("diary", "diary entry"), ("concept", "concept"), ("link", "link")):
    admin_command(f"{_kind}_delete", f"withdraw a {_what} of yours (a signed retraction; friends' copies follow)",
                  _ID)(_retract(_kind))


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


@admin_command("note_update", "a new version of one of your private notes (the old one is hidden)",
               {"id": (text(128), True), "text": (text(_LONG), True)})
def _note_update(db, key, now, args):
    _agents_own_note(db, args["id"], private=True)
    return edits.update_note(db, key, args["id"], args["text"], now_ms=now)


@admin_command("note_delete", "hide one of your notes on this node (copies already delivered stay)", _ID)
def _note_delete(db, key, now, args):
    _agents_own_note(db, args["id"], private=False)
    return edits.hide_note(db, args["id"])
