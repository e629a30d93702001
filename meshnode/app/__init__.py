"""The application layer: every action a person, the agent or another party can take, once.

Each action is one async function taking the node's dependencies (``App``) and an explicit
``Actor`` (who asks); every face (the CLI with or without a running node, the control socket,
the web API, MCP, A2A, the agent's commands, the reactor and the gate's approvals) calls it
through ``dispatch``. Side effects (gossip, the reactor's poke) belong to the action, so no
face can forget one. The actions' table is ``meshnode.app.dispatch.ACTIONS``.

Layering: above the store and the network, below the engines (agent, reactor, gate, spawn)
and the faces, which call down into it; what an action needs from an engine (the reactor to
poke) is handed to ``App`` by the node, never imported.
"""
