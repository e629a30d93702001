"""The types of the ethics commands: read the policies, add the agent's own, remove its own."""

from __future__ import annotations

from meshnode.records import ethics
from meshnode.engines.cognition.command_kind import kind
from meshnode.base.container.schema import list_of, text

_NAME = text(64)

TYPES = (
    kind("ethics_list", "the ethics policies in force (the person's and your own)", {}, mutating=False, closed=True),
    kind("ethics_add", "add an ethics policy of your own (it never replaces one the person set)",
         {"name": (_NAME, True), "principles": (list_of(text(ethics.MAX_PRINCIPLE), max_items=ethics.MAX_PRINCIPLES,
                                                        non_empty=True), True),
          "model_type": (text(64), False), "on_violation": (text(ethics.MAX_TEXT), False)}, closed=True),
    kind("ethics_remove", "remove an ethics policy you added (the person's stay)", {"name": (_NAME, True)}, closed=True),
)
