"""The agent's command table: each command's type (name, argument schema, summary) and what runs it.

Assembled here, explicitly, from the types (``command_types``) and the store-side handlers
(``handlers``): nothing registers itself by being imported. An entry with a handler runs in the
store's worker thread (``executor``); an entry without one needs the node's event loop, and the
cycle runs it (mesh, gate, process, MCP and report commands: ``cycle.DEFERRED_TYPES``). An entry
is the one place a command's action is named, so it can later name an application-layer action
instead of a local handler.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from meshnode.engines.cognition.command_kind import CommandType
from meshnode.engines.cognition.command_types import TYPES
from meshnode.engines.cognition.handlers import (config, edits, ethics, goals, knowledge, mind, notes, peers, processes,
                                         services, tables)
from meshnode.base.identity.keys import NodeKey
from meshnode.store.database import Database

Handler = Callable[[Database, NodeKey, int, dict], Any]


@dataclass(frozen=True)
class Entry:
    kind: CommandType
    handler: Handler | None  # None: the cycle runs it


def _table(*groups: dict[str, Handler]) -> dict[str, Entry]:
    handlers: dict[str, Handler] = {}
    for group in groups:
        for name, fn in group.items():
            if name not in TYPES or name in handlers:
                raise ValueError(f"handler for {name}: {'no such command type' if name not in TYPES else 'twice'}")
            handlers[name] = fn
    return {name: Entry(kind, handlers.get(name)) for name, kind in TYPES.items()}


TABLE = _table(knowledge.HANDLERS, notes.HANDLERS, mind.HANDLERS, peers.HANDLERS, config.HANDLERS, services.HANDLERS,
               goals.HANDLERS, tables.HANDLERS, edits.HANDLERS, ethics.HANDLERS, processes.HANDLERS)
