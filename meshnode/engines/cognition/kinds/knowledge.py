"""The types of the commands over the agent's knowledge: diary entries, concepts, links, tags, pins."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, LONG, TAGS, kind
from meshnode.base.container.schema import did, integer, list_of, text

TYPES = (
    kind("diary_list", "recent diary entries", {"limit": (integer(1, 500), False), "tags": (TAGS, False)},
         mutating=False),
    kind("diary_search", "search the diary", {"query": (text(1024), True), "limit": (integer(1, 500), False)},
         mutating=False),
    kind("diary_read", "read a diary entry", {"id": (text(128), True)}, mutating=False),
    kind("diary_add", "write a diary entry", {"text": (text(LONG), True), "title": (text(), False),
                                               "tags": (TAGS, False), "replaces": (did, False)}),
    kind("concept_add", "define a concept", {"label": (text(), True), "description": (text(LONG), False),
                                              "aliases": (list_of(text()), False), "tags": (TAGS, False)}),
    kind("concept_list", "concepts", LIMIT, mutating=False),
    kind("link_add", "relate concepts", {"source": (did, True), "relation": (text(64), True),
                                         "targets": (list_of(did, max_items=256, non_empty=True), True)}),
    kind("link_list", "links between concepts", LIMIT, mutating=False),
    kind("tags_list", "tags in use, with counts", LIMIT, mutating=False),
    kind("pin", "keep a diary entry or concept in view (context 5)", {"id": (did, True)}),
    kind("unpin", "stop keeping it in view", {"id": (did, True)}),
)
