"""The gate's tools: what each does, its arguments (JSON Schema) and its risk.

Risk levels (seed 004): ``safe_read`` runs at once; ``modify`` creates a
draft a person reviews before any real file changes (``run_command`` runs in
a scratch copy of the workspace and its file changes come back as drafts);
``destructive`` waits for a person's explicit confirmation. Configuration can
raise a tool's risk, for the tool as a whole or for calls whose arguments
match a pattern; it can never lower one.

The same tools are the cognitive core's commands and, through
``openai_tools()``, function definitions in the OpenAI tools format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import httpx

from meshnode.engines.gate import GateError
from meshnode.engines.gate.argschema import obj, string
from meshnode.engines.spawn.model import KINDS

SAFE_READ, MODIFY, DESTRUCTIVE = "safe_read", "modify", "destructive"
RISKS = (SAFE_READ, MODIFY, DESTRUCTIVE)


@dataclass(frozen=True)
class Tool:
    name: str
    summary: str
    parameters: dict
    risk: str


_PATH = string(4096, minLength=1)
TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("read_file", "read a file of the workspace (drafted content included)",
         obj({"path": _PATH}, {"max_bytes": {"type": "integer", "minimum": 1, "maximum": 1 << 20}}), SAFE_READ),
    Tool("list_dir", "list a folder of the workspace", obj({}, {"path": _PATH}), SAFE_READ),
    Tool("search_files", "find a text in the workspace's files",
         obj({"pattern": string(256, minLength=1)}, {"path": _PATH}), SAFE_READ),
    Tool("patch_file", "replace one exact occurrence of a text in a file (a draft, reviewed before it applies)",
         obj({"path": _PATH, "search": string(64 * 1024, minLength=1), "replace": string(64 * 1024)}), MODIFY),
    Tool("write_file", "write a whole file (a draft, reviewed before it applies)",
         obj({"path": _PATH, "content": string(1 << 20)}), MODIFY),
    Tool("delete_file", "delete a file (needs a person's confirmation, then a reviewed draft)",
         obj({"path": _PATH}), DESTRUCTIVE),
    Tool("run_command", "run an allowed program without a shell, in a scratch copy of the workspace; files it"
         " changes come back as drafts",
         obj({"program": string(64, minLength=1)},
             {"args": {"type": "array", "items": string(4096), "maxItems": 64}}), MODIFY),
    Tool("http_fetch", "GET a web page (hosts outside [gate] http_hosts need a person's confirmation)",
         obj({"url": string(2048, minLength=8)}), SAFE_READ),
    Tool("spawn", "create and start a child node beside this one (clone: all it may copy; trained: its knowledge;"
         " newborn: nothing); a person confirms first",
         obj({"kind": {"type": "string", "enum": list(KINDS)}}, {"name": string(64, minLength=1)}), DESTRUCTIVE),
)}


def tool_definition(name: str, description: str, parameters: dict) -> dict:
    """One function in the OpenAI ``tools`` request format."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def openai_tools() -> list[dict]:
    """The gate's tools in the OpenAI ``tools`` request format (the cognitive core offers all its
    commands, these among them, through ``cognition.catalogue.tool_definitions``)."""
    return [tool_definition(t.name, f"{t.summary} [risk: {t.risk}]", t.parameters) for t in TOOLS.values()]


@dataclass(frozen=True)
class RiskRule:
    tool: str
    risk: str
    pattern: re.Pattern


@dataclass(frozen=True)
class RiskPolicy:
    """Raises, never lowers: the risk of a call is the highest of the tool's own, its configured
    one, and that of every rule whose pattern matches the call's arguments (as canonical JSON)."""
    per_tool: dict[str, str] = field(default_factory=dict)
    rules: tuple[RiskRule, ...] = ()
    http_hosts: frozenset[str] = frozenset()

    def risk_of(self, tool: str, args: dict) -> str:
        levels = [TOOLS[tool].risk, self.per_tool.get(tool, SAFE_READ)]
        text = json.dumps(args, sort_keys=True, ensure_ascii=False)
        levels += [r.risk for r in self.rules if r.tool in (tool, "*") and r.pattern.search(text)]
        if tool == "http_fetch" and _host(args.get("url", "")) not in self.http_hosts:
            levels.append(DESTRUCTIVE)  # the network reaches out of the host: a person decides
        return max(levels, key=RISKS.index)


def _host(url: str) -> str:
    """The host as the HTTP client will read it (one parser for the check and the request)."""
    try:
        return httpx.URL(url).host.lower()
    except (httpx.InvalidURL, ValueError, UnicodeError, TypeError):
        return ""


def risk_policy(per_tool: dict[str, str], rules: list[str], http_hosts: list[str]) -> RiskPolicy:
    """From ``[gate] risk`` (tool -> level) and ``[gate] risk_rules`` ("TOOL LEVEL REGEX" each)."""
    for tool, level in per_tool.items():
        if tool not in TOOLS or level not in RISKS:
            raise GateError("bad_config", f"gate.risk: {tool!r} = {level!r}: tools are {', '.join(TOOLS)};"
                            f" levels are {', '.join(RISKS)}")
    parsed = []
    for rule in rules:
        parts = rule.split(" ", 2)
        if len(parts) != 3 or (parts[0] not in TOOLS and parts[0] != "*") or parts[1] not in RISKS:
            raise GateError("bad_config", f"gate.risk_rules: {rule[:80]!r} is not 'TOOL LEVEL REGEX'")
        try:
            parsed.append(RiskRule(parts[0], parts[1], re.compile(parts[2])))
        except re.error as exc:
            raise GateError("bad_config", f"gate.risk_rules: {rule[:80]!r}: {exc}") from None
    return RiskPolicy(dict(per_tool), tuple(parsed), frozenset(h.lower() for h in http_hosts))
