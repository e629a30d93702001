"""The small subset of JSON Schema the gate's tools use, and a strict checker for it.

Tool schemas are shown to the LLM in the OpenAI tools format, so they are
plain JSON Schema; the gate checks every call's arguments against the same
schema before anything runs. Supported: ``type`` (object, string, integer,
number, boolean, array), ``properties``, ``required``, ``additionalProperties:
false`` (always enforced for objects), ``enum``, ``minLength``/``maxLength``,
``minimum``/``maximum``, ``items``, ``maxItems``. Booleans are never numbers.
"""

from __future__ import annotations

from typing import Any

from meshnode.engines.gate import GateError

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,),
          "object": (dict,)}


def check(value: Any, schema: dict, where: str = "args") -> None:
    """Raise GateError("bad_args", reason naming the place) unless ``value`` fits ``schema``."""
    kind = schema.get("type")
    if kind is not None:
        allowed = _TYPES[kind]
        if not isinstance(value, allowed) or (isinstance(value, bool) and kind != "boolean"):
            raise GateError("bad_args", f"{where} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
    if "enum" in schema and value not in schema["enum"]:
        raise GateError("bad_args", f"{where} must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            raise GateError("bad_args", f"{where} must not be empty" if schema.get("minLength") == 1
                            else f"{where} is shorter than {schema['minLength']} characters")
        if len(value) > schema.get("maxLength", 1 << 30):
            raise GateError("bad_args", f"{where} is longer than {schema['maxLength']} characters")
        if "\x00" in value:
            raise GateError("bad_args", f"{where} contains a NUL character")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: not text any file, log or database can hold
            raise GateError("bad_args", f"{where} is not valid UTF-8 text") from None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < schema.get("minimum", float("-inf")) or value > schema.get("maximum", float("inf")):
            raise GateError("bad_args", f"{where} must be between {schema.get('minimum')} and {schema.get('maximum')}")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", 1 << 30):
            raise GateError("bad_args", f"{where} has more than {schema['maxItems']} items")
        for i, item in enumerate(value):
            check(item, schema.get("items", {}), f"{where}[{i}]")
    if isinstance(value, dict) and kind == "object":
        props = schema.get("properties", {})
        for name in value:
            if name not in props:
                raise GateError("bad_args", f"{where} has an unknown field {str(name)[:40]!r}"
                                f" (known: {', '.join(sorted(props)) or 'none'})")
        for name in schema.get("required", []):
            if name not in value:
                raise GateError("bad_args", f"{where} needs {name!r}")
        for name, sub in props.items():
            if name in value:
                check(value[name], sub, f"{where}.{name}")


def string(max_length: int = 4096, **extra) -> dict:
    return {"type": "string", "maxLength": max_length, **extra}


def obj(required: dict[str, dict], optional: dict[str, dict] | None = None) -> dict:
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": sorted(required),
            "additionalProperties": False}
