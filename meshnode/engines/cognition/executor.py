"""Running the store-side commands an answer carried (seed 000, step 8), by the command table.

Each store-side command has a handler (``command_table``) that takes the database, the node key,
the time and the command's validated arguments, and returns a small JSON-able result the next
tick shows the LLM. Handlers run in the store's worker thread (one writer). The commands that
need the node's event loop (mesh, gate, processes, MCP, reports) the cycle runs itself.
"""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import CommandType
from meshnode.engines.cognition.command_table import TABLE
from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.store.database import Database


def handles(name: str) -> bool:
    """Whether this store-side executor runs ``name`` (the rest need the cycle: mesh, gate, processes)."""
    entry = TABLE.get(name)
    return entry is not None and entry.handler is not None


def run(db: Database, key: NodeKey, now_ms: int, cmd: Command) -> dict:
    """{"cmd_id", "type", "status": ok|error, "result" or "error"}; never raises for a command's fault."""
    entry = TABLE.get(cmd.type)
    if entry is None or entry.handler is None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error",
                "error": f"{cmd.type} is not available to the cognitive core yet"}
    args = cmd.args
    if cmd.type == "llm_task" and cmd.target_llm and "target_llm" not in args:  # the seed puts it beside args
        args = {**args, "target_llm": cmd.target_llm}
    try:
        if entry.kind.closed:
            _refuse_unknown(entry.kind, args)
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok",
                "result": entry.handler(db, key, now_ms, args)}
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}


def _refuse_unknown(kind: CommandType, args: dict) -> None:
    """A closed command refuses arguments its schema does not name: extraction refuses them too,
    but a command may be reached another way (a held command released, a test)."""
    known = sorted(kind.schema.fields)
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise MeshnodeError("bad_args", f"{kind.name} takes {', '.join(known) or 'no arguments'}, not"
                                        f" {', '.join(unknown)}{kind.unknown_note}")
