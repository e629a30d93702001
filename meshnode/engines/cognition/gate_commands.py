"""The action gate's tools as the cognitive core's commands (issue 7; seed 004).

Each gate tool is a command of the same name and arguments (``read_file``,
``patch_file``, ``run_command``, ...), plus ``drafts_list`` (the session's
open drafts and their diffs) and ``drafts_submit`` (reflection before
completion: the main LLM checks the work, then a person is told to review).
They need the node's event loop (commands, HTTP, the LLM), so the cycle runs
them after the store-side commands of an answer, like the mesh commands, and
only when the answer passed validation. Their results, including refusals
and pending confirmations, come back in the next tick. Their types: ``kinds/gate.py``.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.records.gate import drafts
from meshnode.engines.gate.tools import TOOLS

ASYNC_TYPES = (*TOOLS, "drafts_list", "drafts_submit")


async def run(gate, cmd: Command, reflect: Callable[[str], Awaitable[str]]) -> dict:
    """One gate command; an error result (never an exception) when the gate refuses it."""
    if gate is None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": "the action gate is off here"}
    try:
        if cmd.type == "drafts_list":
            result = await gate.store.write(drafts.review, gate.jail, gate.settings.session)
        elif cmd.type == "drafts_submit":
            result = await gate.submit(cmd.args["summary"], reflect)
        else:
            result = await gate.call(cmd.type, cmd.args)
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}
    return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": result}

