"""Who asks: the person (through the cli, the web or mcp), the agent, an A2A party, a peer, or
the node itself.

The face that received a request sets its actor; no argument a caller sends can choose it (the
control socket's clients, for example, are the person: the socket is readable by its owner
alone). What the node writes for an actor is recorded locally (``store.provenance``, never
signed nor synced); a note's signed ``source`` is derived from it (``signed_source``).
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.base.errors import MeshnodeError
from meshnode.store import speakers

KINDS = ("person", "agent", "a2a", "peer", "node")
PERSON_FACES = ("cli", "web", "mcp")  # how the person reaches the node
AGENT_VIAS = ("cycle", "task")  # the agent's main loop, or an auxiliary loop working on a task


@dataclass(frozen=True)
class Actor:
    """``kind``: one of KINDS; ``via``: the face or loop it came through (person: cli/web/mcp;
    agent: cycle/task; node: what part of it, e.g. gate, reactor); ``id``: an A2A party's key id
    or a peer's DID; ``label``: a name to show (an A2A party's label, a peer's name)."""

    kind: str
    via: str = ""
    id: str = ""
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"actor kind must be one of {', '.join(KINDS)}")
        if self.kind == "person" and self.via not in PERSON_FACES + ("",):  # "": a face not recorded
            raise ValueError(f"the person comes through one of {', '.join(PERSON_FACES)}")
        if self.kind == "agent" and self.via not in AGENT_VIAS:
            raise ValueError(f"the agent acts through one of {', '.join(AGENT_VIAS)}")
        if self.kind in ("a2a", "peer") and not self.id:
            raise ValueError(f"an actor of kind {self.kind} needs an id")

    def row(self) -> dict:
        """The provenance columns (store.provenance.record)."""
        return {"kind": self.kind, "via": self.via, "id": self.id or None, "label": self.label or None}


def person(via: str) -> Actor:
    return Actor("person", via)


def approver(by: str | None) -> Actor:
    """The person who approved a confirmation, by the face they used (``gate_confirmations.decided_by``)."""
    return person(by if by in PERSON_FACES else "")


AGENT = Actor("agent", "cycle")
AGENT_TASK = Actor("agent", "task")


def node(part: str = "") -> Actor:
    return Actor("node", part)


def a2a(key_id: str, label: str = "") -> Actor:
    return Actor("a2a", "a2a", key_id, label)


def peer(did: str, name: str = "") -> Actor:
    return Actor("peer", "mesh", did, name)


def is_person(kind: str | None) -> bool:
    """Whether what was asked (an Actor's or a provenance row's kind) came from the node's person:
    the one predicate for "is this from the person?" everywhere."""
    return kind == "person"


PERSON_OR_NODE = ("person", "node")  # who changes the node itself (its friends, children, the mesh's rounds)
THIS_NODE = ("person", "agent", "node")  # this node's own side: not an A2A party, not a peer


def allow(actor: Actor, kinds: tuple[str, ...], what: str) -> None:
    """MeshnodeError ``not_allowed`` unless ``actor`` is of one of ``kinds``: an action's one check of
    who may take it."""
    if actor.kind not in kinds:
        raise MeshnodeError("not_allowed", f"{what} is for {' or '.join(described(k) for k in kinds)} only")


def decided_by(actor: Actor, what: str) -> str:
    """Who decides, as a decision's row records it (``decided_by``, ``paused_by``: the face the
    person came through), or ``not_allowed`` for anyone but the person; ``what``: what only the
    person does, for the refusal ("releases held commands")."""
    if not is_person(actor.kind):
        raise MeshnodeError("not_allowed", f"only the node's person {what}")
    return actor.via or "person"


_SIGNED = {("person", "cli"): "cli", ("agent", "task"): "llm:task"}
_SIGNED_KIND = {"person": "user", "agent": "llm", "node": "system", "a2a": "user", "peer": "user"}


def signed_source(actor: Actor) -> str:
    """The HMP ``source`` a note written for ``actor`` carries (notes.SOURCES): what travels is
    HMP's coarse vocabulary; the exact actor stays in the local provenance row."""
    return _SIGNED.get((actor.kind, actor.via)) or _SIGNED_KIND[actor.kind]


def described(kind: str | None, via: str | None = None, label: str | None = None, id: str | None = None) -> str:
    """A provenance row in words, for listings: "the person (web)", "the agent", "A2A party bob"..."""
    if kind == "person":
        return f"the person ({via})" if via else "the person"
    if kind == "agent":
        return "the agent (task loop)" if via == "task" else "the agent"
    if kind == "node":
        return f"this node ({via})" if via else "this node"
    if kind in ("a2a", "peer"):  # names cleaned, and known or not (store.speakers)
        if not (label or id):
            return f"an {kind.upper()} party" if kind == "a2a" else "a peer"
        return speakers.of(None, kind, via, id or label, label, None).words()
    return "unknown"
