"""The types of the action gate's tools as commands (the cycle runs them: gate_commands).

Each gate tool is a command of the same name and arguments (``read_file``, ``patch_file``,
``run_command``, ...), checked against the tool's own JSON Schema; plus ``drafts_list`` and
``drafts_submit``.
"""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import CommandType, kind
from meshnode.base.container.schema import described, text
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate import argschema
from meshnode.engines.gate.tools import SAFE_READ, TOOLS


def _field(schema: dict):
    def check(value) -> str | None:
        try:
            argschema.check(value, schema, "")
        except MeshnodeError as exc:
            return exc.reason.lstrip(" ")
        return None
    return described(check, schema)  # the tool's own JSON Schema: checked and shown alike


def _tool_kind(tool) -> CommandType:
    props, required = tool.parameters["properties"], set(tool.parameters["required"])
    return kind(tool.name, f"{tool.summary} [risk: {tool.risk}]",
                {name: (_field(sub), name in required) for name, sub in props.items()},
                mutating=tool.risk != SAFE_READ)


TYPES = (
    *(_tool_kind(tool) for tool in TOOLS.values()),
    kind("drafts_list", "your open drafts, with their diffs", {}, mutating=False),
    kind("drafts_submit", "check your own work, then hand your drafts to a person for review",
         {"summary": (text(4096), True)}),
)
