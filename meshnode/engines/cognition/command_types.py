"""The commands the cognitive core accepts: every command type, gathered from ``kinds``.

A command is ``{"cmd_id", "type", "args", "description"?, "target_llm"?}``.
Only these types are accepted; each one's ``args`` must satisfy its schema
(the same value checks containers use). Mutating types are marked so the
action gate can hold them.

Adding a command: declare its type in ``kinds/<concern>.py`` with ``kind(name,
summary, {arg: (check, required)})`` and, if the store runs it, its handler in
``handlers/<concern>.py`` (``command_table`` pairs them; the cycle runs the
rest). From the one declaration come the check of each command an answer
carries (``commands``), its line in context 2, ``help``'s details and the
OpenAI tool definition (``catalogue``). There is no other list of commands to
update (tests/test_cognition_catalogue.py holds every command to this).
Pure data: this module and ``kinds`` import no handler.
"""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import COMMAND_BASE, CommandType
from meshnode.engines.cognition.kinds import (config, edits, ethics, gate, goals, knowledge, mcp, mesh, mind, notes, peers,
                                      processes, report, services, tables)

ANSWER_FACTOR = 4  # an answer holds its largest command written with JSON escapes (a tool call: escaped twice)


def _gathered(*groups: tuple[CommandType, ...]) -> dict[str, CommandType]:
    out: dict[str, CommandType] = {}
    for group in groups:
        for kind in group:
            if kind.name in out:
                raise ValueError(f"command type {kind.name} is declared twice")
            out[kind.name] = kind
    return out


TYPES = _gathered(knowledge.TYPES, notes.TYPES, mind.TYPES, peers.TYPES, config.TYPES, services.TYPES, goals.TYPES,
                  tables.TYPES, edits.TYPES, ethics.TYPES, processes.TYPES, mesh.TYPES, gate.TYPES, mcp.TYPES,
                  report.TYPES)
_ANSWER_LIMIT = ANSWER_FACTOR * max([t.max_size for t in TYPES.values()] or [COMMAND_BASE])


def answer_limit() -> int:
    """The longest answer read (characters; twice that in bytes over HTTP): room for the largest command."""
    return _ANSWER_LIMIT


def command_type(name: str) -> CommandType | None:
    return TYPES.get(name)


def command_names() -> list[str]:
    return sorted(TYPES)
