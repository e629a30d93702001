"""Commands that act through the mesh: consensus proposals, messages to agents, sync requests,
announcing this agent (its interests and expertise) in the DHT.

They need the running node's network, so the cycle runs them (async) after
the store-side commands of the same answer, and only when the answer passed
validation. Each returns a result or an error with a reason, like any command.
"""

from __future__ import annotations

from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import AGENT
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch

MESH_TYPES = ("consensus_propose", "send_message", "sync_request", "announce")


def needs_mesh(cmd: Command) -> bool:
    """A mesh command, or one that needs the mesh for some arguments: a task offered by interest
    (the DHT's lookup of the peers announcing it; to named agents it is a store-side write)."""
    return cmd.type in MESH_TYPES or (cmd.type == "task_delegate" and "interest" in cmd.args)


async def run(mesh, store, key, now_ms: int, cmd: Command) -> dict:
    if mesh is None:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": "this node has no mesh"}
    app = App(store, key, mesh=mesh, gmp=getattr(mesh, "gmp", None))  # the actions the person's commands run too
    try:
        if cmd.type == "task_delegate":  # by interest (needs_mesh): the same action as `task assign --interest`
            args = cmd.args
            if "to" in args:
                raise MeshnodeError("bad_args", "task_delegate takes to (DIDs) or interest (a tag), not both")
            result = await dispatch(app, AGENT, "task_assign", {
                "task": args["task"], "interest": args["interest"], "candidates_max": args.get("candidates", 1),
                **({"expires_s": args["expires_s"]} if "expires_s" in args else {})})
        elif cmd.type == "consensus_propose":
            result = await dispatch(app, AGENT, "consensus_propose", {"value": cmd.args["value"]})
        elif cmd.type == "send_message":  # a friends note naming only the addressee, pushed to it now
            note = await store.write_background(write_note, key, AGENT, cmd.args["text"], now_ms=now_ms,
                                                audience="friends", recipients=[cmd.args["to"]])
            result = {"did": note.did, **(await mesh.push(cmd.args["to"], [note]))}
        elif cmd.type == "announce":
            result = await mesh.announce_now(cmd.args.get("interests", []), cmd.args.get("expertise", []))
        else:
            result = await dispatch(app, AGENT, "sync", {"did": cmd.args["peer"]})
    except MeshnodeError as exc:
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}
    return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": result}
