"""What a running node does on its own about goals and tasks (gmp.md sections 6.1 and 8).

* A candidate's node returns a signed receipt for an offer naming it, and an assignee's
  node for the task version that first names it (delivery, not consent: nobody receipts
  for another).
* The delegator's node turns the earliest counted acceptance of its open offer into the
  next task version, the acceptor assigned and the acceptance in ``related.agreed``.
* The creator's node removes a holder dead for ``dead_grace_ms`` (``reassigned_dead``) or
  past ``overdue_at`` (``reassigned_overdue``); the node then offers the task again.

Called through ``gmp.service`` (``on_admitted``, ``reassign_stale``); each returns the
containers it published and the ``push`` list, like every service action (``gmp.publish``).
"""

from __future__ import annotations

import logging

from meshnode.base.container import Container, format_ms, parse_ms
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp import build, rules, view
from meshnode.records.gmp.reads import TASK_TERMINAL, delegates, held, task_row
from meshnode.records.gmp.publish import Push, publish, publish_task_version, push_task_version, task_audience
from meshnode.records.gmp.store_admission import DbHeld
from meshnode.store import lineage as lineage_index
from meshnode.store.database import sql_errors

log = logging.getLogger("meshnode.domain.gmp")


def on_admitted(db, key, now_ms, dids: list[str]) -> dict:
    push, published = Push(key.did), []
    for did in dict.fromkeys(d for d in dids if isinstance(d, str)):
        try:  # each reaction commits on its own: one refused must not lose the pushes of the others
            _react_to(db, key, now_ms, did, push, published)
        except MeshnodeError as exc:
            log.info("no reaction to %s: %s: %s", did, exc.code, exc.reason)
    return {"published": published, "push": push.result()}


def _react_to(db, key, now_ms, did: str, push: Push, published: list) -> None:
    c = held(db, did)
    if c is None or not rules.is_gmp(c) or not isinstance(c.payload, dict):
        return
    p = c.payload
    if c.cls == "workflow_entry":
        kind = p.get("entry_type")
        reply = c.related.get("in_reply_to") or []
        if kind == "delegation" and not p.get("nomination") and key.did in (p.get("candidates") or []) \
                and c.sender_did != key.did and reply and _counted(db, c.did):
            _receipt(db, key, now_ms, c, reply[0], push, published)
        elif kind == "acceptance" and isinstance(p.get("offer"), str):
            offer = held(db, p["offer"])
            if offer is not None and offer.sender_did == key.did:
                _assign(db, key, now_ms, offer, push, published)
    elif c.cls == "task":
        root = lineage_index.root_of(db.conn, c.did) or c.did
        if key.did in (p.get("assigned_to") or []) and c.sender_did != key.did:
            before = [held(db, d) for d in c.related.get("previous_version") or []]
            if not any(v is not None and key.did in (v.payload.get("assigned_to") or []) for v in before):
                _receipt(db, key, now_ms, c, root, push, published)
        _join(db, key, now_ms, root, push, published)


def _counted(db, did: str) -> bool:
    """An entry that counts (gmp_entries): an "offer" by someone who may not offer the task is no
    offer, and gets no receipt (each would be a container this node signs and pushes for a stranger)."""
    with sql_errors("reading an entry"):
        row = db.conn.execute("SELECT counted FROM gmp_entries WHERE did = ?", (did,)).fetchone()
    return bool(row and row[0])


def _join(db, key, now_ms, lineage: str, push: Push, published: list) -> None:
    """A fork of a task this node created is joined by a version naming every head (gmp.md section 5,
    ``view.join``: the creator's fields from its best head, the work from the newest head of an
    assignee it still names, or the completion of a holder it removed meanwhile with a ``rollback``
    entry undoing that reassignment), ``reason: merged``. Best effort: a join the rules refuse
    leaves the fork shown as it is (every node still shows the same head)."""
    with sql_errors("looking at a fork"):
        row = db.conn.execute("SELECT creator_did, forks FROM tasks WHERE lineage = ?", (lineage,)).fetchone()
        if row is None or row[0] != key.did or not row[1]:
            return
        heads = [held(db, d) for d in lineage_index.heads(db.conn, lineage)]
    heads = [h for h in heads if h is not None]
    joined = view.join(heads, key.did, DbHeld(db.conn)) if len(heads) >= 2 else None
    if joined is None:
        return
    base, at = joined.base, max(now_ms, *(h.timestamp_ms + 1 for h in heads))
    reply = list(base.related.get("in_reply_to") or [])
    c = build.task(key, joined.payload, now_ms=at, goal=reply[0], parent_task=reply[1] if len(reply) > 1 else None,
                   depends_on=tuple(base.related.get("depends_on") or ()),
                   previous=tuple(sorted(h.did for h in heads)), tags=tuple(base.head.get("tags") or ()))
    try:
        publish(db, c, now_ms)
    except rules.GmpRefused:
        return
    published.append(c.did)
    row = task_row(db, lineage)
    push_task_version(push, db, row, c)  # the goal's audience, the holders the fork named among them
    if joined.contradicts:  # finished work is kept: the reassignment it contradicts is undone, visibly
        undo = publish(db, build.entry(key, "rollback", {}, now_ms=at, about=lineage, contradicts=joined.contradicts,
                                       summary="the holder completed the task while it was being reassigned"), now_ms)
        published.append(undo.did)
        push.add(task_audience(db, row), [undo.did])


def _receipt(db, key, now_ms, received: Container, about: str, push: Push, published: list) -> None:
    with sql_errors("looking for a receipt"):
        done = db.conn.execute("SELECT 1 FROM gmp_entries WHERE kind = 'receipt' AND signer = ? AND offer = ?",
                               (key.did, received.did)).fetchone()
    if done:
        return
    e = publish(db, build.entry(key, "receipt", {"received": received.did, "received_at": format_ms(now_ms)},
                               now_ms=now_ms, about=about, recipients=(received.sender_did,)), now_ms)
    published.append(e.did)
    push.add([received.sender_did], [e.did])


def _assign(db, key, now_ms, offer: Container, push: Push, published: list) -> None:
    """The earliest counted acceptance of ``offer`` (this node's) becomes the next task version,
    once: an offer whose acceptance a version already cites is answered."""
    p = offer.payload
    lineage = (offer.related.get("in_reply_to") or [None])[0]
    candidates = p.get("candidates") or []
    try:
        expires = parse_ms(p.get("expires_at"), "expires_at")
    except Exception:  # noqa: BLE001 — admitted offers have one; a broken one offers nothing
        return
    with sql_errors("reading acceptances"):
        row_exists = db.conn.execute("SELECT 1 FROM tasks WHERE lineage = ?", (lineage,)).fetchone()
        accepts = db.conn.execute(
            "SELECT c.did, c.sender_did, c.timestamp_ms FROM gmp_entries e JOIN containers c ON c.did = e.did"
            " WHERE e.kind = 'acceptance' AND e.offer = ? ORDER BY c.timestamp_ms, c.did", (offer.did,)).fetchall()
    if not row_exists:
        return
    accepts = [(d, s) for d, s, t in accepts if s in candidates and t <= expires]
    if not accepts:
        return
    marks = ",".join("?" * len(accepts))
    with sql_errors("reading assignments"):
        used = db.conn.execute(f"SELECT 1 FROM container_links WHERE relation = 'agreed' AND target_did IN ({marks})",
                               [d for d, _ in accepts]).fetchone()
    if used:
        return
    row = task_row(db, lineage)
    acceptance, acceptor = accepts[0]
    if row["status"] in TASK_TERMINAL or acceptor in row["assigned_to"] or not delegates(db, row, key.did):
        return
    c, row = publish_task_version(db, key, now_ms, row, {"assigned_to": [*row["assigned_to"], acceptor], "reason": "assigned"},
                           agreed=(acceptance,))
    published.append(c.did)
    push_task_version(push, db, row, c, newcomers=(acceptor,))


def _state(value) -> tuple[str | None, int]:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        state, since = value
        return (state if isinstance(state, str) else None), (since if type(since) is int else 0)
    return (value if isinstance(value, str) else None), 0


def reassign_stale(db, key, now_ms, *, liveness: dict, dead_grace_ms: int) -> dict:
    push, out = Push(key.did), []
    with sql_errors("looking for stale tasks"):
        lineages = [r[0] for r in db.conn.execute(
            "SELECT lineage FROM tasks WHERE creator_did = ? AND lineage IS NOT NULL AND status NOT IN"
            " ('completed', 'failed', 'abandoned') AND assigned_to IS NOT NULL AND assigned_to != '[]'"
            " AND EXISTS (SELECT 1 FROM json_each(assigned_to))", (key.did,))]
    for lin in lineages:
        row = task_row(db, lin)
        others = [a for a in row["assigned_to"] if a != key.did]
        dead = [a for a in others if _state(liveness.get(a))[0] == "dead"
                and now_ms - _state(liveness.get(a))[1] >= dead_grace_ms]
        overdue = row.get("overdue_at_ms") is not None and now_ms >= row["overdue_at_ms"]
        removed, why = (dead, "reassigned_dead") if dead else (others, "reassigned_overdue") if overdue else ([], None)
        if not removed:
            continue
        left = [a for a in row["assigned_to"] if a not in removed]
        changes = {"assigned_to": left, "reason": why}
        if not left:
            changes.update(status="pending", next_check_at=None)
        c, row = publish_task_version(db, key, now_ms, row, changes)
        push_task_version(push, db, row, c)  # the removed holders too: they held it in ``row``
        out.append({"task": lin, "removed": removed, "why": why, "did": c.did, "tags": row["tags"]})
    return {"reassigned": out, "push": push.result()}
