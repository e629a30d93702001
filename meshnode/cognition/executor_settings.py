"""The agent's commands on its own settings that a person keeps the last word on:
``llm_update`` (the LLM registry) and ``reputation_set`` (trust in another agent).

``llm_update`` changes what shapes its thinking (priority, timeout, model name)
but never the endpoint's URL, its API key variable or the validator role:
pointing an LLM elsewhere could send the key and the contexts to a stranger,
and choosing its own validators would let the agent pass its own answers.

``reputation_set`` does not set a score: reputation is evidence-based, and a
model's opinion is not evidence (protocols/reputation.md). It asks the person,
with a private note that names the command to run
(``meshnode reputation set``), and the person decides. Registered on import.
"""

from __future__ import annotations

import json

from meshnode.cognition import registry
from meshnode.cognition.executor_admin import admin_command
from meshnode.container.schema import did, integer, number, text
from meshnode.errors import MeshnodeError
from meshnode.notes import make_note, own_local

REQUEST_TAG = "reputation-request"


@admin_command("llm_update", "change a registered LLM's priority, timeout or model name (not its URL, key or role)",
               {"name": (text(64), True), "priority": (integer(-1_000_000, 1_000_000), False),
                "timeout_s": (number(1, 3600), False), "model": (text(256), False)},
               extra_note="; the URL, the API key variable and the validator role are the person's to change")
def _llm_update(db, key, now, args):
    changes = {k: args[k] for k in ("priority", "timeout_s", "model") if k in args}
    if not changes:
        raise MeshnodeError("bad_args", "llm_update changes priority, timeout_s or model")
    if any(e.id == args["name"] and e.validator for e in registry.endpoints(db)):
        raise MeshnodeError("refused", f"{args['name']} is a validator: its settings are the person's to change")
    e = registry.update(db, args["name"], **changes)
    return {"name": e.id, "priority": e.priority, "timeout_s": e.timeout_s, "model": e.model}


@admin_command("reputation_set", "ask the person to set an agent's trust (0..1); they decide, you are told",
               {"did": (did, True), "score": (number(0, 1), True), "reason": (text(200), True)})
def _reputation_set(db, key, now, args):
    if args["did"] == key.did:
        raise MeshnodeError("bad_args", "that is this agent's own DID")
    reason = " ".join(args["reason"].split())
    line = f"meshnode reputation set {args['did']} {args['score']:g} --reason {json.dumps(reason, ensure_ascii=False)}"
    note = make_note(key, f"The agent asks you to set its trust in {args['did']} to {args['score']:g}: {reason}\n"
                          f"To do so, run:\n  {line}\n(Trust changes only by evidence or by you.)",
                     now_ms=now, topic="trust request", source="system", audience="private")
    db.put_container(note, received_at_ms=now, local=own_local(REQUEST_TAG))  # for the person, not the agent's mail
    return {"asked": "the person", "note": note.did, "applied": False}
