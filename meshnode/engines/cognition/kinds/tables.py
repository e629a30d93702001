"""The types of the commands over the agent's own tables (handlers/tables.py builds their SQL)."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, kind
from meshnode.base.container.schema import mapping, text

TYPES = (
    kind("table_list", "the agent's own tables, with their columns and row counts", LIMIT, mutating=False, closed=True),
    kind("table_add", "create a table of the agent's own: columns {name: integer|real|text|blob}",
         {"name": (text(64), True), "columns": (mapping, True), "description": (text(4096), False)}, closed=True),
    kind("table_delete", "drop one of the agent's tables and its rows", {"name": (text(64), True)}, closed=True),
    kind("table_insert", "add a row {column: value} to one of the agent's tables (blob: base64 text)",
         {"name": (text(64), True), "row": (mapping, True)}, closed=True),
    kind("table_query", "rows of one of the agent's tables; where {column: value} matches by equality",
         {"name": (text(64), True), "where": (mapping, False), **LIMIT}, mutating=False, closed=True),
)
