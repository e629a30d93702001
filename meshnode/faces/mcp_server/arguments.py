"""A tool call's arguments, checked before the SDK sees them (stdio and ``/mcp`` alike): an argument the
tool does not take is a JSON-RPC error -32602 naming it (the SDK would drop it silently), and a value
the tool refuses is the tool's error result in one sentence naming the argument and what it takes (the
SDK's text is pydantic's, with its URLs). The check is the SDK's own validation (``func_metadata``
builds the same model from the tool's signature that the SDK builds), so nothing passes here that the
SDK then refuses; the sentence is written from the argument's JSON schema, which the client also sees.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from pydantic import ValidationError

MAX_NAMED = 5  # unknown arguments named in one error
MAX_NAME = 64  # characters of an unknown argument's name shown


class ToolArguments:
    """One tool's arguments: their names, schemas and the SDK's model of them."""

    def __init__(self, name: str, fn: Callable):
        self.name = name
        self.meta = func_metadata(fn)
        self.properties: dict[str, dict] = self.meta.arg_model.model_json_schema(by_alias=True).get("properties", {})

    def unknown(self, args: dict) -> list[str]:
        return [k for k in args if k not in self.properties]

    def problem(self, args: dict) -> str | None:
        """The one sentence saying what is wrong with ``args`` (names known), or None when the tool takes them."""
        try:
            self.meta.validate_arguments(args)
        except ValidationError as exc:
            wrong = {str(e["loc"][0]) if e["loc"] else "": e["type"] for e in exc.errors(include_url=False)}
            ordered = [n for n in self.properties if n in wrong] or list(wrong)
            first = ordered[0]
            if first not in self.properties:  # not one argument's fault (no such error today)
                return f"bad_arguments: {self.name} takes {self.signature()}"
            verb = "is required and must be" if wrong[first] == "missing" else "must be"
            also = f" (check {', '.join(ordered[1:])} too)" if len(ordered) > 1 else ""
            return f"bad_arguments: {first} {verb} {takes(self.properties[first])}{also}"
        return None

    def signature(self) -> str:
        return ", ".join(self.properties) if self.properties else "no arguments"


def takes(schema: dict) -> str:
    """What an argument's JSON schema accepts, in words: "an integer from 1 to 500: at most this many rows"."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    words = " or ".join(_kind(s) for s in options) or "a value"
    note = schema.get("description") or next((s["description"] for s in options if s.get("description")), None)
    return f"{words}: {note}" if note else words


def _kind(s: dict) -> str:
    kind = s.get("type")
    if "enum" in s:
        return "one of " + ", ".join(json.dumps(v) for v in s["enum"])
    if kind == "string":
        text = "a string" + _range(s.get("minLength"), s.get("maxLength"), "characters")
        return text + (f" matching {s['pattern']}" if "pattern" in s else "")
    if kind in ("integer", "number"):
        low, high = s.get("minimum"), s.get("maximum")
        what = "an integer" if kind == "integer" else "a number"
        if low is not None and high is not None:
            return f"{what} from {low:g} to {high:g}"
        return what + (f" of at least {low:g}" if low is not None else f" of at most {high:g}" if high is not None
                       else "")
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        items = s.get("items", {})
        each = f", each {_kind(items)}" if items else ""
        return "a list" + _range(s.get("minItems"), s.get("maxItems"), "items") + each
    if kind == "object":
        return "an object"
    return "a value"


def _range(low, high, unit: str) -> str:
    if low is not None and high is not None:
        return f" of {low} to {high} {unit}"
    if high is not None:
        return f" of at most {high} {unit}"
    if low is not None:
        return f" of at least {low} {unit}"
    return ""


class ArgumentCheck:
    """Server middleware (``MCPServer.middleware``) for ``tools/call``: unknown arguments are refused with
    -32602, refused values with the tool's error result, each counted by ``refused(tool, why)``."""

    def __init__(self, refused: Callable[[str, str], None] | None = None):
        self.tools: dict[str, ToolArguments] = {}
        self.refused = refused or (lambda tool, why: None)

    def add(self, name: str, fn: Callable) -> None:
        self.tools[name] = ToolArguments(name, fn)

    async def __call__(self, ctx, call_next) -> Any:
        params = ctx.params if ctx.method == "tools/call" else None
        tool = self.tools.get(params.get("name")) if isinstance(params, dict) else None
        args = params.get("arguments") if tool is not None else None
        if tool is not None and (args is None or isinstance(args, dict)):
            unknown = tool.unknown(args or {})
            if unknown:
                self.refused(tool.name, "unknown_argument")
                named = ", ".join(json.dumps(k[:MAX_NAME]) for k in unknown[:MAX_NAMED])
                plural = "s" if len(unknown) > 1 else ""
                raise MCPError(code=INVALID_PARAMS, message=f"unknown argument{plural} {named}: {tool.name} takes"
                               f" {tool.signature()}", data={"unknown": [k[:MAX_NAME] for k in unknown[:MAX_NAMED]],
                                                             "takes": list(tool.properties)})
            problem = tool.problem(args or {})
            if problem is not None:
                self.refused(tool.name, "bad_arguments")
                return CallToolResult(content=[TextContent(type="text", text=problem)], is_error=True)
        return await call_next(ctx)
