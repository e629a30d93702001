"""What a command type is: a name, the schema of its arguments, a summary, and whether it changes state.

The bottom of the command set: pure data, no handlers, no registry. Each concern declares its
types in ``kinds/<concern>.py`` with ``kind(name, summary, {arg: (check, required)})``; checks
come from ``container.schema`` (``text``, ``integer``, ``did``, ``list_of`` ...) or are wrapped
with ``described(check, json_schema)``, so every check carries the JSON Schema it enforces.
``command_types`` gathers them all; ``catalogue`` shows them; ``command_table`` pairs each with
its handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from meshnode.base.container.schema import Schema, WrongValue, described, integer, list_of, text

COMMAND_BASE = 64 * 1024  # what a command may hold besides its text arguments (ids, numbers, maps)
LONG = 64 * 1024  # the longest text argument (a diary entry, a note)
TAGS = list_of(text(64), max_items=64)
LIMIT = {"limit": (integer(1, 500), False)}


@dataclass(frozen=True)
class CommandType:
    name: str
    schema: Schema
    mutating: bool
    summary: str
    closed: bool = False  # its handler refuses arguments the schema does not name (reached other than by an answer)
    unknown_note: str = ""  # said after that refusal

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


def kind(name: str, summary: str, fields: dict[str, tuple[Callable[[Any], str | None], bool]],
         mutating: bool = True, closed: bool = False, extra_note: str = "") -> CommandType:
    return CommandType(name, Schema(f"{name}.args", fields), mutating, summary, closed, extra_note)


def named(max_len: int):
    """Text that is not blank (names, logins, versions)."""
    plain = text(max_len)

    def check(v):
        err = plain(v)
        return err or (WrongValue("must not be blank") if not v.strip() else None)
    return described(check, {**plain.json, "minLength": 1})
