"""The one table of actions and the one way in: ``dispatch(app, actor, name, args)``.

Every face calls an action through here with the actor it vouches for; ``args`` are the
caller's (JSON values, checked against the action's parameters), and can never name who asks
or who approved: those are the face's to say.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from meshnode.app.actions import (chat, children, containers, edits, knowledge, meshconsensus, node_status, notes, peers,
                                  reactor, reputation)
from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.errors import MeshnodeError

RESERVED = ("app", "actor", "approved_by")  # set by the face, never by the caller's arguments


@dataclass(frozen=True)
class Action:
    name: str
    fn: Callable[..., Awaitable[Any]]
    summary: str
    signs: bool = True  # it signs with the node's key (a read does not: the CLI then needs no passphrase)


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("note_add", notes.note_add, "write a signed note (a public one is gossiped at once)"),
    Action("notes", notes.notes, "a page of notes, newest first, each with who asked for it", signs=False),
    Action("note_read", notes.note_read, "a note in full, marked read", signs=False),
    Action("note_tag", notes.note_tag, "add and remove a note's local tags", signs=False),
    Action("chat_send", chat.chat_send, "a message to the agent, in a new conversation or one more in a thread"),
    Action("diary_add", knowledge.diary_add, "write a diary entry (CogSync)"),
    Action("concept_add", knowledge.concept_add, "define a concept (CogSync)"),
    Action("link_add", knowledge.link_add, "link a concept to others (CogSync)"),
    Action("edit", edits.edit, "update or withdraw knowledge or a note (a new version, or a retraction)"),
    Action("diary", knowledge.diary, "the newest diary entries", signs=False),
    Action("concepts", knowledge.concepts, "the newest concepts", signs=False),
    Action("links", knowledge.links, "the newest links", signs=False),
    Action("reputation", reputation.reputation, "every agent's trust now, most trusted first", signs=False),
    Action("reputation_show", reputation.reputation_show, "everything behind one agent's trust", signs=False),
    Action("reputation_set", reputation.reputation_set, "the person's judgement of an agent (0..1)", signs=False),
    # the running node's mesh and housekeeping (issue 32: _Control's commands); none signs with the key
    Action("status", node_status.status, "the running node: identity, counts, addresses, peers, agent", signs=False),
    Action("metrics", node_status.metrics, "the node's counters (with full: histograms and gauges)", signs=False),
    Action("peers", peers.peers, "the peers this node knows, connected or not", signs=False),
    Action("ping", peers.ping, "a peer's round trip", signs=False),
    Action("find", peers.find, "an agent by DID, or the agents of an interest, on the mesh", signs=False),
    Action("formation", peers.formation, "connected peers and GossipSub mesh sizes", signs=False),
    Action("friend", peers.friend, "make a peer a friend, or no longer one", signs=False),
    Action("friends", peers.friends, "this node's friends", signs=False),
    Action("sync", peers.sync, "reconcile with one peer now", signs=False),
    Action("send", containers.send, "push a container to a peer", signs=False),
    Action("fetch", containers.fetch, "fetch a container from a peer and store it", signs=False),
    Action("received", containers.received, "when containers arrived here", signs=False),
    Action("export", containers.export, "a container's bytes", signs=False),
    Action("consensus_propose", meshconsensus.consensus_propose, "propose a value to the committee", signs=False),
    Action("consensus_next_committee", meshconsensus.consensus_next_committee, "propose the next committee",
           signs=False),
    Action("consensus_status", meshconsensus.consensus_status, "the committee's state", signs=False),
    Action("consensus_decisions", meshconsensus.consensus_decisions, "the decisions stored here", signs=False),
    Action("reputation_round", reputation.reputation_round, "fold observations and publish trust now",
           signs=False),
    Action("children", children.children, "this node's children", signs=False),
    Action("child_show", children.child_show, "one child in full", signs=False),
    Action("child_remove", children.child_remove, "no longer a child nor a friend", signs=False),
    Action("spawn", children.spawn, "make a child node (a job: pending while it runs)", signs=False),
    Action("spawn_wait", children.spawn_wait, "the result of a pending spawn", signs=False),
    Action("reactor_status", reactor.reactor_status, "the running reactor's state", signs=False),
    Action("reactor_scan", reactor.reactor_scan, "one reactor scan now, in the node", signs=False),
)}


def check_args(name: str, args: dict) -> Action:
    """The action ``name`` if ``args`` fit its parameters, else a MeshnodeError saying why."""
    action = ACTIONS.get(name)
    if action is None:
        raise MeshnodeError("unknown_command", f"no action {name[:40]!r}")
    reserved = sorted(set(args) & set(RESERVED))
    if reserved:
        raise MeshnodeError("bad_request", f"{name}: {', '.join(reserved)} cannot be given (the face that"
                                           " received the request says who asks)")
    try:
        inspect.signature(action.fn).bind(None, None, **args)
    except TypeError as exc:
        raise MeshnodeError("bad_request", f"{name}: {exc}") from None
    return action


async def dispatch(app: App, actor: Actor, name: str, args: dict, *, approved_by: Actor | None = None) -> Any:
    """Run action ``name`` for ``actor``; ``approved_by``: the person whose confirmation carries
    it out (the gate's approvals)."""
    action = check_args(name, args)
    if app.metrics is not None:
        app.metrics.inc("actions", action=name, actor=actor.kind)
    if approved_by is not None:
        return await action.fn(app, actor, **args, approved_by=approved_by)
    return await action.fn(app, actor, **args)
