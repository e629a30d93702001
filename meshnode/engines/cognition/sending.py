"""Commands that send data out of the node (issue 12): a note to friends or to everyone
(``note_add`` with audience friends or public) and a message to another agent (``send_message``).

Once a peer has them they cannot be called back, so they pass the action
gate's ``outbound`` level: what ``[gate] outbound_confirm`` names (by default
public notes and messages to agents that are not friends) waits for a
person's confirmation, and the gate sends it at a later tick once approved;
the rest is sent at once. The cycle runs them after the store-side commands of
an answer, like the mesh commands. A private note never leaves the node and
stays a plain store command.
"""

from __future__ import annotations

from typing import Awaitable, Callable

from meshnode.app.actor import AGENT, Actor, approver
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.engines.cognition import mesh_commands
from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate import outbound


def leaves_node(cmd: Command) -> bool:
    return outbound.kind(cmd.type, cmd.args, set()) is not None


async def run(outbound: Callable[[str, dict], Awaitable[dict | None]] | None, mesh, store, key, now_ms: int,
              cmd: Command) -> dict:
    """Ask a person first when ``outbound`` (the gate's check) says so (the result names the request),
    else send; a refusal of ``outbound`` is the command's error."""
    if outbound is not None:
        try:
            asked = await outbound(cmd.type, cmd.args)
        except MeshnodeError as exc:
            return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason}
        if asked is not None:
            return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": asked}
    return await send(mesh, store, key, now_ms, cmd)


async def send(mesh, store, key, now_ms: int, cmd: Command, approved_by: Actor | None = None) -> dict:
    """Send it now: a note through the application layer's ``note_add`` (a public one is gossiped),
    a message to an agent through the mesh. ``approved_by``: the person whose confirmation it was."""
    if cmd.type != "note_add":
        return await mesh_commands.run(mesh, store, key, now_ms, cmd)
    app = App(store, key, mesh=mesh, clock=lambda: now_ms)
    try:
        result = await dispatch(app, AGENT, "note_add", dict(cmd.args), approved_by=approved_by)
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}
    return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": result}


def approved(mesh, store, key, clock: Callable[[], int]) -> Callable[[str, dict, str | None], Awaitable[dict]]:
    """The gate's ``send_out``: a send a person approved, sent now (``decided_by``: the face they
    approved it through)."""
    async def send_out(tool: str, args: dict, decided_by: str | None = None) -> dict:
        return await send(mesh, store, key, clock(), Command("approved", tool, args), approved_by=approver(decided_by))
    return send_out
