"""The types of the commands over notes: the person's, other agents' and the agent's own."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LONG, TAGS, kind
from meshnode.base.container.schema import boolean, integer, one_of, text

TYPES = (
    kind("note_list", "incoming notes", {"limit": (integer(1, 500), False), "unread": (boolean, False)},
         mutating=False),
    kind("note_read", "read a note (marks it read)", {"id": (text(128), True)}),
    kind("note_add", "write a note to the user; to answer the person or an A2A party, reply_to their"
                     " message's id (context 6a, 6b)",
         {"text": (text(LONG), True), "topic": (text(), False),
          "audience": (one_of("private", "friends", "public"), False), "reply_to": (text(128), False)}),
    kind("note_tag", "tag a note", {"id": (text(128), True), "tags": (TAGS, True)}),
    kind("note_readmark", "mark a note read or unread", {"id": (text(128), True), "read": (boolean, False)}),
)
