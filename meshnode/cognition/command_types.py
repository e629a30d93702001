"""The commands the cognitive core accepts, each with a schema for its arguments.

A command is ``{"cmd_id", "type", "args", "description"?, "target_llm"?}``.
Only registered types are accepted; each one's ``args`` must satisfy its
schema (the same value checks containers use). Mutating types are marked so
the action gate can hold them.

Adding a command is one declaration, ``command(name, summary, {arg: (check,
required)})`` (or ``executor_admin.admin_command`` with its handler), in a
module the ``executor`` import chain loads. Its checks come from
``container.schema`` (``text``, ``integer``, ``did``, ``list_of`` ...) or are
wrapped with ``described(check, json_schema)``: every check carries the JSON
Schema it enforces, and from it ``catalogue`` makes the line the LLM sees in
context 2, ``help``'s details and the OpenAI tool definition. There is no other
list of commands to update (tests/test_cognition_catalogue.py holds every
registered command to this).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from meshnode.container.schema import Schema, boolean, did, integer, list_of, mapping, number, one_of, text

_LONG = 64 * 1024
_tags = list_of(text(64), max_items=64)
COMMAND_BASE = 64 * 1024  # what a command may hold besides its text arguments (ids, numbers, maps)
ANSWER_FACTOR = 4  # an answer holds its largest command written with JSON escapes (a tool call: escaped twice)


@dataclass(frozen=True)
class CommandType:
    name: str
    schema: Schema
    mutating: bool
    summary: str

    @property
    def max_size(self) -> int:
        """The most a command of this type may hold (``commands.size``): the base plus every
        bounded argument at its largest, so a command its schema admits is never refused for size."""
        return COMMAND_BASE + sum(len(name) + _largest(getattr(check, "json", {}))
                                  for name, (check, _) in self.schema.fields.items())


def _largest(schema: dict) -> int:
    """The size of the largest value a JSON Schema admits, as ``commands.size`` counts it (0 when
    unbounded: maps and any-values share the base)."""
    if "anyOf" in schema:
        return max(_largest(s) for s in schema["anyOf"])
    if schema.get("type") == "string":
        return schema.get("maxLength", 0)
    if schema.get("type") == "array":
        return 2 + schema.get("maxItems", 0) * _largest(schema.get("items", {}))
    return 8


def answer_limit() -> int:
    """The longest answer read (characters; twice that in bytes over HTTP): room for the largest command."""
    _complete()
    return ANSWER_FACTOR * max([t.max_size for t in _TYPES.values()] or [COMMAND_BASE])


_TYPES: dict[str, CommandType] = {}


def command(name: str, summary: str, fields: dict[str, tuple[Callable[[Any], str | None], bool]],
            mutating: bool = True) -> None:
    _TYPES[name] = CommandType(name, Schema(f"{name}.args", fields), mutating, summary)


def _complete() -> None:
    """Load every module that registers commands (they import this one, so this is done at the
    first use, not at import): ``catalogue`` imports the executor chain and the gate's commands."""
    from meshnode.cognition import catalogue  # noqa: F401


def command_type(name: str) -> CommandType | None:
    _complete()
    return _TYPES.get(name)


def command_names() -> list[str]:
    _complete()
    return sorted(_TYPES)


command("help", "detailed help for a command", {"command": (text(64), False)}, mutating=False)
command("diary_list", "recent diary entries", {"limit": (integer(1, 500), False), "tags": (_tags, False)},
        mutating=False)
command("diary_search", "search the diary", {"query": (text(1024), True), "limit": (integer(1, 500), False)},
        mutating=False)
command("diary_read", "read a diary entry", {"id": (text(128), True)}, mutating=False)
command("diary_add", "write a diary entry", {"text": (text(_LONG), True), "title": (text(), False),
                                              "tags": (_tags, False), "replaces": (did, False)})
command("concept_add", "define a concept", {"label": (text(), True), "description": (text(_LONG), False),
                                             "aliases": (list_of(text()), False), "tags": (_tags, False)})
command("link_add", "relate concepts", {"source": (did, True), "relation": (text(64), True),
                                        "targets": (list_of(did, max_items=256, non_empty=True), True)})
command("note_list", "incoming notes", {"limit": (integer(1, 500), False), "unread": (boolean, False)},
        mutating=False)
command("note_read", "read a note (marks it read)", {"id": (text(128), True)})
command("note_add", "write a note to the user; to answer the person, reply_to their message's id (context 6a)",
        {"text": (text(_LONG), True), "topic": (text(), False),
         "audience": (one_of("private", "friends", "public"), False), "reply_to": (text(128), False)})
command("note_tag", "tag a note", {"id": (text(128), True), "tags": (_tags, True)})
command("llm_memory_add", "remember something", {"text": (text(_LONG), True), "tags": (_tags, False)})
command("llm_memory_delete", "forget an llm_memory entry", {"id": (integer(0), True)})
command("llm_task", "give another LLM a task (a one-shot question or a read-only loop); task_id hands it an"
        " existing task, e.g. a fact-check whose verdict it then gives",
        {"task_description": (text(_LONG), True), "mode": (one_of("question", "read_only_loop"), False),
         "task_id": (integer(0), False),
         "target_llm": (text(64), False), "max_ticks": (integer(1, 1000), False),
         "delay_s": (number(0, 86400), False), "deadline_ms": (integer(0), False), "backoff": (number(1, 10), False)})
command("consensus_vote", "vote on a container", {"target": (did, True), "value": (integer(-1, 1), True),
                                                  "decision": (one_of("general", "ethical"), False)})
command("consensus_propose", "ask the committee to decide", {"value": (text(16 * 1024), True)})
command("send_message", "send a note to another agent", {"to": (did, True), "text": (text(_LONG), True)})
command("sync_request", "sync notes and knowledge with a peer now", {"peer": (did, True)})
command("announce", "announce this agent in the mesh now, adding interests and expertise (tags)",
        {"interests": (list_of(text(64), max_items=64), False), "expertise": (list_of(text(64), max_items=64), False)})
command("cycle_settings", "change the cycle", {"responses": (integer(1, 100), False),
                                                "pause_seconds": (number(0, 86400), False),
                                                "concentration": (mapping, False), "idle": (mapping, False),
                                                "mode": (one_of("auto", "manual"), False),
                                                "notes_filter": (mapping, False)})

_limit = {"limit": (integer(1, 500), False)}
command("tags_list", "tags in use, with counts", _limit, mutating=False)
command("reputation_list", "agents by trust", _limit, mutating=False)
command("reputation_show", "the evidence behind one agent's trust", {"did": (did, True)}, mutating=False)
command("agents_list", "known HMP agents", _limit, mutating=False)
command("llm_select", "make a registered LLM the main one", {"name": (text(64), True)})
command("identity_show", "this agent's DID and peer id", {}, mutating=False)
command("concept_list", "concepts", _limit, mutating=False)
command("link_list", "links between concepts", _limit, mutating=False)
command("methods_list", "thinking methods or stagnation strategies",
        {"kind": (one_of("thinking", "stagnation"), False)}, mutating=False)
command("method_add", "record a thinking method or a stagnation strategy",
        {"kind": (one_of("thinking", "stagnation"), False), "name": (text(), True),
         "description": (text(4096), True), "tags": (_tags, False)})
command("rate", "rate a thinking method or a stagnation strategy",
        {"kind": (one_of("thinking", "stagnation"), True), "id": (integer(0), True),
         "rating": (integer(-3, 3), True), "comment": (text(1024), False)})
command("note_readmark", "mark a note read or unread", {"id": (text(128), True), "read": (boolean, False)})
command("pin", "keep a diary entry or concept in view (context 5)", {"id": (did, True)})
command("unpin", "stop keeping it in view", {"id": (did, True)})
