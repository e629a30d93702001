"""The types of the commands that change or withdraw knowledge and notes (new versions, retractions, hiding)."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LONG, kind
from meshnode.base.container.schema import did, list_of, text

_ID = {"id": (text(128), True)}

TYPES = (
    kind("concept_update", "a new version of a concept: label, description, aliases or tags (others kept)",
         {"id": (text(128), True), "label": (text(256), False), "description": (text(LONG), False),
          "aliases": (list_of(text(256), max_items=256), False),
          "tags": (list_of(text(64), max_items=64), False)}, closed=True),
    kind("link_update", "a new version of a link: its relation, targets or inverse relation",
         {"id": (text(128), True), "relation": (text(64), False),
          "targets": (list_of(did, max_items=256, non_empty=True), False), "inverse": (text(64), False)}, closed=True),
    kind("note_update", "a new version of one of your private notes (the old one is hidden)",
         {"id": (text(128), True), "text": (text(LONG), True)}, closed=True),
    kind("note_delete", "hide one of your notes on this node (copies already delivered stay)", _ID, closed=True),
    *(kind(f"{name}_delete", f"withdraw a {what} of yours (a signed retraction; friends' copies follow)", _ID,
           closed=True) for name, what in (("diary", "diary entry"), ("concept", "concept"), ("link", "link"))),
)
