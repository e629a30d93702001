"""How the cognitive core's commands are shown, all made from their argument schemas.

Each command is declared once, in ``kinds`` (``kind(name, summary,
{arg: (check, required)})``, gathered by ``command_types``); every check carries the JSON Schema it enforces
(``container.schema.described``). From that one declaration come: the check of
each command an answer carries (``commands``), one line per command in context
2 (``catalogue``), the details of ``help`` with ``{"command": NAME}``
(``help_of``) and the OpenAI tool definitions (``tool_definitions``). Nothing
here lists commands by hand: a declared command appears everywhere at once.
"""

from __future__ import annotations

from meshnode.engines.cognition.command_types import CommandType, command_names, command_type
from meshnode.engines.gate.tools import tool_definition

LEGEND = ("One line per command: name(arg:type, optional?:type) what it does. Types: str, int, num, bool, "
          "did, obj (a JSON object), any, [T] (a list of T), a|b (one of), lo..hi (a range). "
          'Limits and an example: help {"command": "NAME"}.\n')


def arguments_schema(kind: CommandType) -> dict:
    """The JSON Schema of a command's ``args``: the same rules its checks apply."""
    fields = kind.schema.fields
    return {"type": "object",
            "properties": {name: dict(getattr(check, "json", {})) for name, (check, _) in fields.items()},
            "required": sorted(name for name, (_, required) in fields.items() if required),
            "additionalProperties": False}


def type_label(schema: dict) -> str:
    """A short name for a value's type, for the one-line catalogue."""
    if "anyOf" in schema:
        return "|".join(type_label(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "|".join(str(v) for v in schema["enum"])
    kind, lo, hi = schema.get("type"), schema.get("minimum"), schema.get("maximum")
    if kind in ("integer", "number") and lo is not None and hi is not None and (hi - lo <= 10 or kind == "number"
                                                                                  and hi <= 1):
        return f"{lo:g}..{hi:g}"
    if kind == "array":
        return f"[{type_label(schema.get('items', {}))}]"
    if kind == "string":
        return "did" if schema.get("format") == "did" else "str"
    return {"integer": "int", "number": "num", "boolean": "bool", "object": "obj"}.get(kind, "any")


def line(kind: CommandType) -> str:
    args = ", ".join(f"{name}{'' if required else '?'}:{type_label(getattr(check, 'json', {}))}"
                     for name, (check, required) in kind.schema.fields.items())
    return f"{kind.name}({args}) {kind.summary}"


def catalogue(names: list[str] | None = None) -> str:
    """Every command (or those ``names``), one line each, with the legend (context 2)."""
    return LEGEND + "\n".join(line(command_type(name)) for name in (command_names() if names is None else names))


def describe(schema: dict) -> str:
    """A value's rules in words (``help``)."""
    if "anyOf" in schema:
        return " or ".join(describe(s) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if schema.get("format") == "did":
            return "a DID (did:<method>:<id>)"
        size = f"text of at most {schema['maxLength']} characters" if "maxLength" in schema else "text"
        return size + (", not blank" if schema.get("minLength") else "")
    if kind in ("integer", "number"):
        word = "an integer" if kind == "integer" else "a number"
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and hi is not None:
            return f"{word} from {lo:g} to {hi:g}"
        return word + (f" >= {lo:g}" if lo is not None else f" <= {hi:g}" if hi is not None else "")
    if kind == "array":
        most = f" (at most {schema['maxItems']})" if "maxItems" in schema else ""
        least = ", not empty" if schema.get("minItems") else ""
        return f"a list{most}{least} of: {describe(schema.get('items', {}))}"
    if kind == "object":
        return "a JSON object"
    if kind == "boolean":
        return "true or false"
    return "any JSON value"


def _example_value(name: str, schema: dict):
    if "anyOf" in schema:
        return _example_value(name, schema["anyOf"][0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        if schema.get("format") == "did":
            return "did:key:z6Mk..."
        return f"<{name}>".ljust(schema.get("minLength", 0), "-")
    if kind in ("integer", "number"):
        return max(schema.get("minimum", 1), min(0, schema.get("maximum", 0)))
    if kind == "array":
        return [_example_value(name, schema.get("items", {}))] if schema.get("minItems") else []
    return {"boolean": True, "object": {}}.get(kind, None)


def help_of(kind: CommandType) -> dict:
    """One command in detail: what each argument takes, and a command that would be accepted."""
    schema = arguments_schema(kind)
    args = {name: ("required: " if name in schema["required"] else "optional: ") + describe(sub)
            for name, sub in schema["properties"].items()}
    example = {"cmd_id": "c1", "type": kind.name,
               "args": {name: _example_value(name, schema["properties"][name]) for name in schema["required"]}}
    return {"command": kind.name, "summary": kind.summary, "usage": line(kind), "changes_state": kind.mutating,
            "args": args, "example": example}


def tool_definitions() -> list[dict]:
    """Every command as an OpenAI function definition, with its arguments' JSON Schema."""
    return [tool_definition(name, command_type(name).summary, arguments_schema(command_type(name)))
            for name in command_names()]
