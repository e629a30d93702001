"""The outbound risk level: what the agent sends out of the node (issue 12; seed 004's gate).

A private note stays on the node; a note to friends or to everyone, and a
message to another agent, leave it, and cannot be called back once a peer has
them. These sends are a risk level of their own, ``outbound``, between the
gate's ``modify`` and ``destructive``: each kind of send asks a person first
when ``[gate] outbound_confirm`` names it (by default a public note and a
message to an agent that is not a friend), and the rest go at once. The
person answers with ``meshnode confirm approve|reject ID`` like any
confirmation; an approved send runs at the next tick.
"""

from __future__ import annotations

from meshnode.base.config.gate import DEFAULT_OUTBOUND_CONFIRM, OUTBOUND, OUTBOUND_KINDS, outbound_confirm_problem
from meshnode.engines.gate import GateError

TOOLS = ("note_add", "send_message")
KINDS = OUTBOUND_KINDS  # kind -> (what it is, the command that does it)
DEFAULT_CONFIRM = DEFAULT_OUTBOUND_CONFIRM


def kind(tool: str, args: dict, friends: set[str]) -> str | None:
    """Which kind of send a command is (a key of KINDS), None when nothing leaves the node."""
    if tool == "note_add":
        audience = args.get("audience", "private")
        return audience if audience in ("public", "friends") else None
    if tool == "send_message":
        return "friend" if args.get("to") in friends else "stranger"
    return None


def confirm_policy(kinds: list[str]) -> frozenset[str]:
    """From ``[gate] outbound_confirm``: the kinds of send that wait for a person."""
    problem = outbound_confirm_problem(kinds)
    if problem:
        raise GateError("bad_config", problem)
    return frozenset(kinds)
