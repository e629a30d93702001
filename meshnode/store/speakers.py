"""Who wrote a note, as the agent and the person are shown it: by the local provenance record
(``store.provenance``), never by the note's text nor its signed ``source`` (an A2A party's message
is signed ``user`` like the person's, and any text can claim any sender).

The kinds: ``person`` (a provenance row of kind person: the cli, the web, mcp), ``a2a`` (a row of
kind a2a: the party's key id and the name it gave), ``peer`` (no row and another author's DID, or
a row of kind peer), ``node`` and ``agent`` (this node's own rows), and ``unrecorded`` (this node's
DID or none, with no row: signed with this node's key elsewhere, or from before containers; never
the person's). Every name shown is cleaned (``clean``): no line breaks, brackets, control or
markdown characters, cut to ``MAX_LABEL``; callers quote text and names as JSON strings besides.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LABEL = 64
MAX_ID = 160
# the provenance row and the peer's name (the person's petname for it first) of a note row ``n`` (a LEFT JOIN and columns, in this order)
JOIN = "LEFT JOIN provenance pr ON pr.container_did = n.container_did"
COLUMNS = ("pr.kind, pr.via, pr.actor_id, pr.label, n.agent_did,"
           " COALESCE((SELECT petname FROM petnames pn WHERE pn.did = n.agent_did),"
           " (SELECT name FROM agent_peers ap WHERE ap.id = n.agent_did))")
N_COLUMNS = 6
CONVERSATION = ("person", "a2a")  # whose messages are conversations with the agent (reply_to answers them)
OWN = ("node", "agent")  # this node's own notices and notes
_KEPT = frozenset(" .,_-@:/+'")


def clean(text: object, limit: int = MAX_LABEL) -> str:
    """A name safe to show anywhere: letters, digits, spaces and ``.,_-@:/+'`` kept, any other
    character (line breaks, brackets, quotes, ``#``, ``*``, control characters) an ``_``; spaces
    collapsed; cut to ``limit`` with an ellipsis; "?" when nothing is left."""
    s = "".join(ch if ch.isalnum() or ch in _KEPT else "_" for ch in str(text or ""))
    s = " ".join(s.split())
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    return s or "?"


@dataclass(frozen=True)
class Speaker:
    kind: str  # person, agent, a2a, peer, node, unrecorded
    via: str = ""  # person: cli, web, mcp; agent: cycle, task; node: its part
    id: str = ""  # an A2A party's key id, a peer's DID, an unrecorded note's author DID (cleaned)
    label: str = ""  # a name (cleaned)

    @property
    def known(self) -> bool:
        """An A2A party with a token the person issued (its key id is ``known:<name>``)."""
        return self.kind == "a2a" and self.id.startswith("known:")

    def fields(self) -> dict:
        """Who, as JSON fields of a message or a note shown to the agent (``from`` first)."""
        if self.kind == "person":
            return {"from": "the person", **({"via": self.via} if self.via else {})}
        if self.kind == "agent":
            return {"from": "your auxiliary loop" if self.via == "task" else "you"}
        if self.kind == "node":
            return {"from": "this node", **({"part": self.via} if self.via else {})}
        if self.kind == "a2a":
            return {"from": "A2A party", "party": self.label, "key": self.id, "known": self.known}
        if self.kind == "peer":
            return {"from": "peer", "peer": self.label, "did": self.id} if self.label else {"from": "peer", "did": self.id}
        return {"from": "unrecorded", "did": self.id or "?",
                "note": "signed with this node's key, but no record of who asked for it here"}

    def words(self) -> str:
        """Who, in a few words (the reactor's summaries, listings): "the person (web)", "A2A party
        "bob" (known)", "peer "alice" (did:...)"... Names are cleaned and quoted."""
        if self.kind == "person":
            return f"the person ({self.via})" if self.via else "the person"
        if self.kind == "agent":
            return "the agent (task loop)" if self.via == "task" else "the agent"
        if self.kind == "node":
            return f"this node ({self.via})" if self.via else "this node"
        if self.kind == "a2a":
            return f"A2A party \"{self.label}\" ({'known' if self.known else 'unknown'}, key {self.id})"
        if self.kind == "peer":
            return f"peer \"{self.label}\" ({self.id})" if self.label else f"peer {self.id}"
        return f"unrecorded ({self.id or '?'})"


def _a2a_name(actor_id: str) -> str:
    """The name inside an A2A party's key id: ``known:<name>``, ``unknown:<address>:<name>``."""
    if actor_id.startswith("known:"):
        return actor_id[len("known:"):]
    return actor_id.rsplit(":", 1)[-1] if actor_id.startswith("unknown:") else actor_id


def of(own_did: str | None, kind: str | None, via: str | None, actor_id: str | None, label: str | None,
       author_did: str | None, peer_name: str | None = None) -> Speaker:
    """The speaker of a note row: its provenance row's fields (``COLUMNS``' order), its author DID
    and that peer's name. Only a provenance row of kind person makes the person."""
    if kind in ("person", "agent", "node"):
        return Speaker(kind, clean(via, 16) if via else "")
    if kind == "a2a":
        key = str(actor_id or "")
        return Speaker("a2a", "", clean(key, MAX_ID), clean(label or _a2a_name(key)))
    if kind == "peer":
        return Speaker("peer", "", clean(actor_id or author_did, MAX_ID), clean(label or peer_name) if (label or peer_name) else "")
    if author_did is not None and author_did != own_did:
        return Speaker("peer", "", clean(author_did, MAX_ID), clean(peer_name) if peer_name else "")
    return Speaker("unrecorded", "", clean(author_did, MAX_ID) if author_did else "")


def of_row(own_did: str | None, row) -> Speaker:
    """``of`` over the ``N_COLUMNS`` values a query read with ``COLUMNS``."""
    return of(own_did, *row[:N_COLUMNS])


def of_note(conn, own_did: str | None, container_did: str) -> Speaker | None:
    """The speaker of one note held here (None: no such note)."""
    row = conn.execute(f"SELECT {COLUMNS} FROM notes n {JOIN} WHERE n.container_did = ?", (container_did,)).fetchone()
    return of_row(own_did, row) if row is not None else None
