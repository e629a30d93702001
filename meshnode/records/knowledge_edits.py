"""Changing and withdrawing knowledge and notes, which are immutable signed containers.

* **Update** of a concept or a link: a new version naming the one shown
  (``related.previous_version``), like ``diary add --replaces``; the fields not
  given are kept. Anyone may version any lineage (CogSync's rule); the views
  pick the head by author trust.
* **Delete** of a diary entry, concept or link: a *retraction*, a signed new
  version of the lineage with ``retracted: true`` that replaces this node's
  heads of it, so the lineage leaves the views on this node and on every node
  that syncs it (``protocols/cogsync.md`` 6), unless someone else's
  concurrent version remains: that one is shown then. A retraction travels like any version, which is
  why only the author of the version shown may retract: withdrawing others'
  knowledge from friends' views is not ours to do (version it instead).
* **Notes** are messages, not lineages: ``note_update`` writes a new note of
  the author's naming the old one, and the views hide a note its own author
  replaced; ``note_delete`` hides a note on this node only (the local
  ``hidden`` mark). Copies already delivered stay where they are.

One set of functions for the CLI and the agent's commands.
"""

from __future__ import annotations

import json

from meshnode.base.container import Container, build_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note, own_local
from meshnode.store import lineage
from meshnode.store.database import Database, sql_errors
from meshnode.store.sharing import friends

RETRACTED = "retracted"
_TABLES = {"diary": ("diary_entries", "diary_entry"), "concept": ("concepts", "semantic_node"),
           "link": ("links", "semantic_edges")}
_WHAT = {"diary": "diary entry", "concept": "concept", "link": "link"}


class EditError(MeshnodeError):
    """Knowledge or a note that cannot be changed or withdrawn as asked."""


def _shown(db: Database, kind: str, ident: str, now_ms: int) -> tuple[str, Container]:
    """(lineage, the version the view shows) of a lineage named by its id or any version's DID."""
    table, cls = _TABLES[kind]
    with sql_errors(f"reading {table}"):
        root = db.conn.execute("SELECT root FROM container_versions WHERE did = ? AND class = ?",
                               (ident, cls)).fetchone()
        row = db.conn.execute(f"SELECT lineage, container_did FROM {table} WHERE lineage = ?",
                              (root[0] if root else ident,)).fetchone()
    if row is None:
        raise EditError("not_found", f"no {_WHAT[kind]} {str(ident)[:128]} on this node (see `meshnode {kind} list`)")
    c = db.load_container(row[1], now_ms=now_ms)
    if c is None:
        raise EditError("not_found", f"the {_WHAT[kind]} {row[1]} is not in the store")
    return row[0], c


def _keep(db: Database, c: Container, now_ms: int, asked_by: dict | None) -> dict:
    db.put_container(c, received_at_ms=now_ms, local={"asked_by": asked_by} if asked_by else None)
    return {"did": c.did}


def update_concept(db: Database, key: NodeKey, ident: str, *, now_ms: int, asked_by: dict | None = None, label: str | None = None,
                   description: str | None = None, aliases: list[str] | None = None,
                   tags: list[str] | None = None) -> dict:
    _, old = _shown(db, "concept", ident, now_ms)
    payload = {k: v for k, v in old.payload.items() if k != RETRACTED}
    if label is not None:
        if not label.strip():
            raise EditError("empty_concept", "a concept needs a label")
        payload["label"] = label
    if description is not None:
        payload["description"] = description
    if aliases is not None:
        payload["aliases"] = sorted(set(aliases))
    head = {"tags": sorted(set(tags if tags is not None else old.head.get("tags", [])))}
    c = build_container(key, "semantic_node", payload, timestamp_ms=now_ms,
                        head_extra=head if head["tags"] else None, related={"previous_version": [old.did]})
    return {**_keep(db, c, now_ms, asked_by), "replaces": old.did}


def update_link(db: Database, key: NodeKey, ident: str, *, now_ms: int, asked_by: dict | None = None, relation: str | None = None,
                targets: list[str] | None = None, inverse: str | None = None) -> dict:
    """A link of one edge (as ``link add`` makes them): its relation, targets or inverse."""
    _, old = _shown(db, "link", ident, now_ms)
    edges = old.payload["edges"]
    if len(edges) != 1 or len(next(iter(edges.values()))) != 1:
        raise EditError("not_one_edge", f"link {old.did} holds several edges; update changes a link of one edge"
                                        " (retract it and add new links instead)")
    source, [edge] = next(iter(edges.items()))
    edge = dict(edge)
    if relation is not None:
        edge["relation"] = relation
    if targets is not None:
        if not targets:
            raise EditError("bad_link", "a link needs at least one target")
        edge["targets"] = sorted(set(targets))
    if inverse is not None:
        edge["inverse_relation"] = inverse
    payload = {**{k: v for k, v in old.payload.items() if k != RETRACTED}, "edges": {source: [edge]}}
    c = build_container(key, "semantic_edges", payload, timestamp_ms=now_ms,
                        head_extra={"tags": old.head["tags"]} if old.head.get("tags") else None,
                        related={"previous_version": [old.did]})
    return {**_keep(db, c, now_ms, asked_by), "replaces": old.did}


def retract(db: Database, key: NodeKey, kind: str, ident: str, *, now_ms: int, asked_by: dict | None = None) -> dict:
    """Withdraw a diary entry, concept or link of this node's: a signed version that ends its lineage."""
    if kind not in _TABLES:
        raise EditError("bad_request", f"retract takes one of {', '.join(_TABLES)}")
    root, shown = _shown(db, kind, ident, now_ms)
    if shown.sender_did != key.did:
        raise EditError("refused", f"the {kind} shown is by {shown.sender_did}; only its author retracts it"
                                   " (write a new version, or a link such as 'contradicts', to disagree)")
    heads = sorted(d for d in lineage.heads(db.conn, root) if (c := db.load_container(d, now_ms=now_ms)) is not None
                   and c.sender_did == key.did)  # others' concurrent versions stay theirs, and shown
    payload = {**shown.payload, RETRACTED: True}
    c = build_container(key, shown.cls, payload, timestamp_ms=max(now_ms, shown.timestamp_ms + 1),
                        head_extra={"tags": shown.head["tags"]} if shown.head.get("tags") else None,
                        related={"previous_version": heads})
    return {**_keep(db, c, now_ms, asked_by), "retracted": root}


def update_note(db: Database, key: NodeKey, note_did: str, text: str, *, now_ms: int, asked_by: dict | None = None) -> dict:
    """A new version of one of this node's notes: same topic, audience and priority; the old
    one is hidden wherever the new one arrives."""
    old = _own_note(db, key, note_did, now_ms)
    p = old.payload
    recipients = friends(db) if p["audience"] == "friends" else None
    c = make_note(key, text, now_ms=max(now_ms, old.timestamp_ms + 1), topic=p.get("topic"), source=p["source"],
                  audience=p["audience"], priority=p.get("priority", 0), recipients=recipients,
                  forward=p.get("forward", 0), replaces=[old.did])
    tags = db.conn.execute("SELECT tags FROM notes WHERE container_did = ?", (old.did,)).fetchone()
    local = own_local(*(json.loads(tags[0]) if tags and tags[0] else []))
    db.put_container(c, received_at_ms=now_ms, local={**local, "asked_by": asked_by} if asked_by else local)
    return {"did": c.did, "replaces": old.did}


def hide_note(db: Database, note_did: str, hidden: bool = True) -> dict:
    """Hide a note on this node (or show it again); it is never deleted, and never un-sent."""
    with db.transaction() as conn:
        if conn.execute("UPDATE notes SET hidden = ? WHERE container_did = ?",
                        (int(hidden), note_did)).rowcount == 0:
            raise EditError("not_found", f"no note {str(note_did)[:128]} on this node")
    return {"did": note_did, "hidden": hidden}


def _own_note(db: Database, key: NodeKey, note_did: str, now_ms: int) -> Container:
    with sql_errors("reading notes"):
        row = db.conn.execute("SELECT agent_did FROM notes WHERE container_did = ?", (note_did,)).fetchone()
    if row is None:
        raise EditError("not_found", f"no note {str(note_did)[:128]} on this node")
    if row[0] != key.did:
        raise EditError("refused", f"note {note_did} is by {row[0]}; only its author writes a new version")
    c = db.load_container(note_did, now_ms=now_ms)
    if c is None:
        raise EditError("not_found", f"the note {note_did} is not in the store")
    return c


_OPS = {
    "concept_update": lambda db, key, ident, now, f, by: update_concept(
        db, key, ident, now_ms=now, label=f.get("label"), description=f.get("description"),
        aliases=f.get("aliases"), tags=f.get("tags"), asked_by=by),
    "link_update": lambda db, key, ident, now, f, by: update_link(
        db, key, ident, now_ms=now, relation=f.get("relation"), targets=f.get("targets"), inverse=f.get("inverse"),
        asked_by=by),
    "diary_delete": lambda db, key, ident, now, f, by: retract(db, key, "diary", ident, now_ms=now, asked_by=by),
    "concept_delete": lambda db, key, ident, now, f, by: retract(db, key, "concept", ident, now_ms=now, asked_by=by),
    "link_delete": lambda db, key, ident, now, f, by: retract(db, key, "link", ident, now_ms=now, asked_by=by),
    "note_update": lambda db, key, ident, now, f, by: update_note(db, key, ident, f.get("text") or "", now_ms=now,
                                                                 asked_by=by),
    "note_delete": lambda db, key, ident, now, f, by: hide_note(db, ident, not f.get("restore")),
}


def apply(db: Database, key: NodeKey, op: str, ident: str, *, now_ms: int, asked_by: dict | None = None,
          **fields) -> dict:
    """One edit by name (the application's ``edit`` action): ``op`` is a key of ``_OPS``; ``asked_by``:
    who asked (an actor's provenance row), recorded with the new version."""
    run = _OPS.get(op)
    if run is None:
        raise EditError("bad_request", f"no edit {str(op)[:40]!r}; one of {', '.join(sorted(_OPS))}")
    return run(db, key, ident, now_ms, fields, asked_by)
