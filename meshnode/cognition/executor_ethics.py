"""The agent's ethics commands: read the policies, add its own, remove its own (seed 000, context 1).

The person's policies bind the agent: it may add stricter norms of its own
(``set_by: agent``) and remove those again, never one the person set.
Registered on import (``executor`` imports it); the work is ``meshnode.ethics``,
the same functions ``meshnode ethics`` calls.
"""

from __future__ import annotations

from meshnode import ethics
from meshnode.cognition.executor_admin import admin_command
from meshnode.container.schema import list_of, text

_NAME = text(64)


@admin_command("ethics_list", "the ethics policies in force (the person's and your own)", {}, mutating=False)
def _ethics_list(db, key, now, args):
    return ethics.listing(db)


@admin_command("ethics_add", "add an ethics policy of your own (it never replaces one the person set)",
               {"name": (_NAME, True), "principles": (list_of(text(ethics.MAX_PRINCIPLE), max_items=ethics.MAX_PRINCIPLES,
                                                              non_empty=True), True),
                "model_type": (text(64), False), "on_violation": (text(ethics.MAX_TEXT), False)})
def _ethics_add(db, key, now, args):
    return ethics.add(db, args["name"], args["principles"], by=ethics.AGENT, model_type=args.get("model_type"),
                      on_violation=args.get("on_violation"))


@admin_command("ethics_remove", "remove an ethics policy you added (the person's stay)", {"name": (_NAME, True)})
def _ethics_remove(db, key, now, args):
    return ethics.remove(db, args["name"], by=ethics.AGENT)
