"""The agent's ethics commands: read the policies, add its own, remove its own (seed 000, context 1).

The person's policies bind the agent: it may add stricter norms of its own
(``set_by: agent``) and remove those again, never one the person set. The work is
``meshnode.records.ethics``, the same functions ``meshnode ethics`` calls.
"""

from __future__ import annotations

from meshnode.records import ethics


def _ethics_list(db, key, now, args):
    return ethics.listing(db)


def _ethics_add(db, key, now, args):
    return ethics.add(db, args["name"], args["principles"], by=ethics.AGENT, model_type=args.get("model_type"),
                      on_violation=args.get("on_violation"))


def _ethics_remove(db, key, now, args):
    return ethics.remove(db, args["name"], by=ethics.AGENT)


HANDLERS = {
    "ethics_list": _ethics_list,
    "ethics_add": _ethics_add,
    "ethics_remove": _ethics_remove,
}
