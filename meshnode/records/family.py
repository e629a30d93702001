"""Family ties in the store: a parent's ``children`` rows and a child's ``spawn_origin`` row.

Both sides of a tie are plain data (protocols/spawn.md section 5): the parent records the child
(``children`` row, the child in ``agent_peers`` with its name and addresses, tagged Friend), the
child records the parent (``agent_peers`` row, Friend, ``spawn_origin``), each side in one
transaction of its own store. Liveness is not kept here: ``children`` joins the node's own
``peer_liveness`` (fed by the child's heartbeats), and the reactor follows ``active_children``.

Every function takes a :class:`~meshnode.store.database.Database` (in the node, through
``store.read``/``store.write``); nothing here touches files or processes.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from meshnode.base.errors import SpawnError
from meshnode.store.database import Database, sql_errors
from meshnode.store.peers import upsert_peer_row
from meshnode.store.sharing import set_friend_tag
from meshnode.store.short_ids import AGENT_HEAD, AGENT_PREFIX, MIN_SHORT

LIVENESS_UNKNOWN = "unknown"  # a child whose heartbeat was never heard here
LIVENESS_REMOVED = "-"  # a removed child's liveness is no longer followed


@dataclass
class ChildRecord:
    did: str
    peer_id: str
    name: str
    kind: str
    depth: int
    autostart: str
    home: str | None = None
    host: str = "local"
    listen_port: int | None = None
    web_port: int | None = None
    invitation_id: str | None = None
    addresses: list[str] = field(default_factory=list)
    seed_report: dict = field(default_factory=dict)


def record_child(db: Database, rec: ChildRecord, now_ms: int) -> None:
    """The parent's side, in one transaction: the ``children`` row (state active), the child in
    ``agent_peers`` (peer id, name, addresses) and the Friend tag, so friends notes and CogSync
    knowledge reach it from the first connection. SpawnError ``name_taken`` when an active child has
    ``rec.name`` (the table's unique index: another process's spawn took it after this one checked)."""
    with db.transaction() as conn:
        try:
            conn.execute(
                "INSERT INTO children (did, peer_id, name, kind, depth, home, host, listen_port, web_port, autostart,"
                " state, invitation_id, addresses, seed_report, created_ms)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
                (rec.did, rec.peer_id, rec.name, rec.kind, rec.depth, rec.home, rec.host, rec.listen_port,
                 rec.web_port, rec.autostart, rec.invitation_id, json.dumps(rec.addresses),
                 json.dumps(rec.seed_report, sort_keys=True), now_ms))
        except sqlite3.IntegrityError as exc:
            if "children.name" not in str(exc):
                raise
            raise SpawnError("name_taken", f"{rec.name!r} already names an active child of this node (spawned"
                             " meanwhile); pick another --name (`meshnode children list` shows the names)") from None
        upsert_peer_row(conn, rec.did, peer_id=rec.peer_id, now_ms=now_ms, source="exchange",
                        addresses=list(rec.addresses), name=rec.name)
        set_friend_tag(conn, rec.did)


def tie_parent(child_db: Database, *, parent_did: str, parent_peer_id: str, parent_name: str,
               addresses: list[str], kind: str, depth: int, now_ms: int,
               invitation_id: str | None = None, invitation: bytes | None = None,
               hello_state: str = "none") -> None:
    """The child's side, in one transaction of the child's store: the parent in ``agent_peers``
    (it is also in bootstrap.txt), tagged Friend, and the one ``spawn_origin`` row (``depth`` is
    the child's own). A second origin is refused by the table (one row at most)."""
    with child_db.transaction() as conn:
        upsert_peer_row(conn, parent_did, peer_id=parent_peer_id, now_ms=now_ms, source="bootstrap",
                        addresses=list(addresses), name=parent_name)
        set_friend_tag(conn, parent_did)
        conn.execute(
            "INSERT INTO spawn_origin (id, parent_did, parent_name, kind, depth, invitation_id, invitation,"
            " hello_state, created_ms) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)",
            (parent_did, parent_name, kind, depth, invitation_id, invitation, hello_state, now_ms))


_COLUMNS = ("did, c.peer_id, c.name, kind, depth, host, home, c.state, listen_port, web_port, autostart, created_ms,"
            " removed_ms, invitation_id, c.addresses, seed_report, l.state AS liveness, l.last_heard_ms")
_SELECT = f"SELECT {_COLUMNS} FROM children c LEFT JOIN peer_liveness l USING (did)"
_LISTED = ("did", "peer_id", "name", "kind", "depth", "host", "home", "state", "liveness", "last_heard_ms",
           "listen_port", "web_port", "autostart", "created_ms", "removed_ms")


def child_rows(db: Database, where: str = "", params: tuple = ()) -> list[dict]:
    """The ``children`` rows ``where`` picks, oldest first, every column as stored, with the
    liveness the heartbeat tracker last wrote (``unknown`` when never heard): every read of the
    children's details goes through here."""
    with sql_errors("reading the children"):
        cur = db.conn.execute(f"{_SELECT} {where} ORDER BY c.created_ms, did", params)
        names = [d[0].split(".")[-1] for d in cur.description]
        rows = [dict(zip(names, r)) for r in cur.fetchall()]
    for r in rows:
        r["liveness"] = r["liveness"] or LIVENESS_UNKNOWN
        if r["state"] == "removed":  # no longer followed: what a still running one is heard as is not shown
            r["liveness"], r["last_heard_ms"] = LIVENESS_REMOVED, None
    return rows


def children(db: Database, *, include_removed: bool = False, now_ms: int | None = None,
             thresholds: tuple[int, int, int] | None = None) -> list[dict]:
    """This node's children, oldest first, with the liveness its own heartbeat tracker last wrote
    (``unknown`` when never heard) and when it last heard each; removed ones only when asked.
    With ``now_ms`` and ``thresholds`` (quiet, stale, dead after ms of silence: ``thresholds_of``)
    the liveness is aged by the silence since (``aged``)."""
    rows = _age(child_rows(db, "" if include_removed else "WHERE c.state = 'active'"), now_ms, thresholds)
    return [{k: r[k] for k in _LISTED} for r in rows]


_ORDER = ("ok", "quiet", "stale", "dead")


def _age(rows: list[dict], now_ms: int | None, thresholds: tuple[int, int, int] | None) -> list[dict]:
    """``rows`` with their liveness ``aged`` (as they are without ``now_ms`` and ``thresholds``)."""
    if now_ms is not None and thresholds is not None:
        for r in rows:
            r["liveness"] = aged(r["liveness"], r["last_heard_ms"], now_ms, thresholds)
    return rows


def aged(state: str, last_heard_ms: int | None, now_ms: int, thresholds: tuple[int, int, int]) -> str:
    """The stored liveness, or a worse one when the silence since the child was last heard says so.
    A row is written when the tracker of a running node sees a change; a node that was stopped (or
    restarted and has not heard the child since) leaves it as it was, so "ok, last heard 3 h ago"
    would otherwise stand."""
    if last_heard_ms is None or state not in _ORDER:
        return state
    silent = now_ms - last_heard_ms
    quiet, stale, dead = thresholds
    by_silence = "dead" if silent >= dead else "stale" if silent >= stale else "quiet" if silent >= quiet else "ok"
    return max(state, by_silence, key=_ORDER.index)


def thresholds_of(net: dict) -> tuple[int, int, int]:
    """(quiet, stale, dead) in ms from the ``[net]`` settings."""
    return tuple(int(float(net[f"{k}_after_seconds"]) * 1000) for k in ("quiet", "stale", "dead"))


def child(db: Database, did_or_prefix: str, *, now_ms: int | None = None,
          thresholds: tuple[int, int, int] | None = None) -> dict:
    """One child (active or removed), with its addresses, seed report and invitation, named by its
    DID, a unique prefix of it (with or without ``did:key:``; the ``key:...`` short id a listing
    shows), or its name when no DID prefix matches; SpawnError ``not_a_child`` otherwise."""
    text = did_or_prefix.strip()
    rows = child_rows(db, "WHERE did = ?", (text,))
    if not rows:
        rows = _by_prefix(db, text)
    if len(rows) != 1:
        what = "no child" if not rows else f"{len(rows)} children ({', '.join(r['name'] for r in rows[:5])})"
        raise SpawnError("not_a_child", f"{text[:80]!r} names {what} of this node; `meshnode children list --all`"
                                        " shows them")
    row = _age(rows, now_ms, thresholds)[0]
    out = {k: row[k] for k in _LISTED}
    out["addresses"] = json.loads(row["addresses"] or "[]")
    out["seed_report"] = json.loads(row["seed_report"] or "{}")
    out["invitation"] = _invitation(db, row["invitation_id"]) if row["invitation_id"] else None
    return out


def _by_prefix(db: Database, text: str) -> list[dict]:
    if text.startswith("key:"):
        body = AGENT_HEAD + text[4:]
    elif text.startswith("did:"):
        body = text
    else:
        body = AGENT_PREFIX + text
    rows = []
    if len(body) >= len(AGENT_HEAD) + MIN_SHORT:  # a shorter prefix matches too much to be meant
        rows = child_rows(db, "WHERE substr(did, 1, ?) = ?", (len(body), body))  # case counts: base58
    if rows:
        return rows
    named = child_rows(db, "WHERE c.name = ?", (text,))
    active = [r for r in named if r["state"] == "active"]
    return active if len(active) == 1 else named  # a name given again after its child was removed: the active one


def one_row(db: Database, action: str, sql: str, params: tuple = ()) -> dict | None:
    """The first row ``sql`` selects, as a dict by column name; None when there is none."""
    with sql_errors(action):
        cur = db.conn.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))


def _invitation(db: Database, invitation_id: str) -> dict:
    row = one_row(db, "reading an invitation", "SELECT id, container, kind, name, depth, created_ms, expires_ms,"
                  " used_by_did, used_ms FROM spawn_invitations WHERE id = ?", (invitation_id,))
    return row or {"id": invitation_id}


def count_active(db: Database) -> int:
    """Children not removed ([spawn] max_children bounds this)."""
    with sql_errors("counting the children"):
        return db.conn.execute("SELECT count(*) FROM children WHERE state = 'active'").fetchone()[0]


def active_children(db: Database) -> list[str]:
    """The DIDs of the children not removed: the reactor follows their liveness."""
    with sql_errors("listing the children"):
        return [r[0] for r in db.conn.execute("SELECT did FROM children WHERE state = 'active' ORDER BY did")]


def origin(db: Database) -> dict | None:
    """This node's ``spawn_origin`` row (who spawned it, how, its depth, the hello's state), or
    None for a node that was not spawned."""
    return one_row(db, "reading the spawn origin", "SELECT parent_did, parent_name, kind, depth, invitation_id,"
                   " hello_state, hello_reason, created_ms FROM spawn_origin WHERE id = 1")


def depth_of(db: Database) -> int:
    """This node's depth in its family: 0 for a root, its ``spawn_origin.depth`` otherwise."""
    o = origin(db)
    return int(o["depth"]) if o else 0


def mark_removed(db: Database, did: str, now_ms: int) -> None:
    """The child leaves the family here: state ``removed`` (its ``children`` row kept, with when),
    and what the spawn made of it among the peers goes, in one transaction: its ``peer_liveness``
    row, and its ``agent_peers`` row (``peers`` no longer lists it), or, when this node has rated
    it (reputation history is kept), the Friend tag on that row. Nothing is shared with it as a
    friend; should it still run and reach this node, it is a peer like any other. Removing a
    removed child changes nothing; a DID that is no child here is SpawnError ``not_a_child``."""
    with db.transaction() as conn:
        cur = conn.execute("UPDATE children SET state = 'removed', removed_ms = COALESCE(removed_ms, ?)"
                           " WHERE did = ?", (now_ms, did))
        if cur.rowcount != 1:
            raise SpawnError("not_a_child", f"{did[:80]} is no child of this node")
        conn.execute("DELETE FROM peer_liveness WHERE did = ?", (did,))
        if conn.execute("SELECT 1 FROM agent_reputation WHERE agent_id = ? LIMIT 1", (did,)).fetchone():
            set_friend_tag(conn, did, False)
        else:
            conn.execute("DELETE FROM agent_peers WHERE id = ?", (did,))


def remove_child(db: Database, did: str, now_ms: int) -> dict:
    """``mark_removed``, then the child's row as it is now (what ``children remove`` prints)."""
    mark_removed(db, did, now_ms)
    return child(db, did)
