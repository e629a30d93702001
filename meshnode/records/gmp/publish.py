"""Publishing a GMP container from this node: store it (admission is the final word) and say who
gets it at once (:class:`Push`); the next version of a task from its shown one. Shared by the
actions of ``gmp.service`` and the node's own reactions in ``gmp.reactions``.
"""

from __future__ import annotations

import json

from meshnode.base.container import Container, format_ms, parse_ms
from meshnode.domain.gmp import build
from meshnode.records.gmp.reads import TASK_TERMINAL, bundle, shown
from meshnode.store.database import Database, sql_errors

DAY_S = 86_400
DEFAULT_CHECK_S = DAY_S  # a held task says when it is looked at next: by default a day on
MAX_WATCHERS = 64  # peers of a goal's audience its containers are pushed to at once; sync carries them to the rest


class Push:
    """Which peers get which containers at once, each list in dependency order, never this node."""

    def __init__(self, me: str):
        self.me, self.to = me, {}

    def add(self, peers, dids) -> None:
        for peer in peers:
            if peer and peer != self.me:
                have = self.to.setdefault(peer, [])
                have += [d for d in dids if d and d not in have]

    def merge(self, other: list[dict]) -> None:
        for item in other:
            self.add([item["to"]], item["dids"])

    def result(self) -> list[dict]:
        return [{"to": peer, "dids": dids} for peer, dids in self.to.items() if dids]


def publish(db: Database, c: Container, now_ms: int, asked_by: dict | None = None) -> Container:
    """Store ``c``; a ``GmpRefused`` from admission propagates as the typed error it is.
    ``asked_by``: who asked this node for it (an actor's row, ``store.provenance``); None for
    the node's own reactions."""
    db.put_container(c, received_at_ms=now_ms, local={"asked_by": asked_by} if asked_by else None)
    return c


def check_every_s(payload: dict) -> int:
    metrics = payload.get("metrics")
    every = metrics.get("check_every_s") if isinstance(metrics, dict) else None
    return every if type(every) is int and every > 0 else DEFAULT_CHECK_S


def next_check(payload: dict, now_ms: int) -> str:
    """The next_check_at a version that holds the task carries: kept while in the future."""
    current = payload.get("next_check_at")
    if isinstance(current, str) and parse_ms(current, "next_check_at") > now_ms:
        return current
    return format_ms(now_ms + check_every_s(payload) * 1000)


def publish_task_version(db, key, now_ms, row: dict, changes: dict, *, agreed=(), see_also=(),
                         asked_by: dict | None = None) -> tuple[Container, dict]:
    """The next version of a task from its shown one, with ``changes`` to the payload
    (a None value removes a field); ``see_also``: what it cites (a steward's goal version)."""
    head = shown(db, row)
    payload = dict(head.payload)
    for k, v in changes.items():
        if v is None:
            payload.pop(k, None)
        else:
            payload[k] = v
    held_by = payload.get("assigned_to") or []
    if held_by and payload["status"] not in TASK_TERMINAL:
        payload["next_check_at"] = changes.get("next_check_at") or next_check(payload, now_ms)
    if not held_by:
        payload.pop("assigned_to", None)
    rel = head.related
    reply = list(rel.get("in_reply_to") or [])
    c = build.task(key, payload, now_ms=now_ms, goal=reply[0], parent_task=reply[1] if len(reply) > 1 else None,
                   depends_on=tuple(rel.get("depends_on") or ()), previous=(head.did,), agreed=tuple(agreed),
                   see_also=tuple(see_also), tags=tuple(head.head.get("tags") or ()))
    return publish(db, c, now_ms, asked_by), row


def goal_audience(db, goal_lineage: str, first=()) -> list[str]:
    """Who gets a goal's containers at once (gmp.md section 7): ``first``, then the goal's audience
    as the views draw it (``gmp_audience``: its creator, the participants of its shown version,
    the assignees of any version of its tasks, the candidates of open offers), creator and
    participants before the rest; at most MAX_WATCHERS besides ``first``. Sync carries everything
    to the whole audience (``store.sharing``); a receiver admits a push as it admits anything."""
    with sql_errors("reading a goal's audience"):
        goal = db.conn.execute("SELECT creator_did, participants FROM goals WHERE lineage = ?",
                               (goal_lineage,)).fetchone()
        rest = [r[0] for r in db.conn.execute("SELECT did FROM gmp_audience WHERE goal_lineage = ? ORDER BY did",
                                              (goal_lineage,))]
    named: list = []
    if goal is not None:
        try:
            named = json.loads(goal[1]) if goal[1] else []
        except ValueError:
            named = []
        named = [goal[0], *(d for d in named if isinstance(d, str))] if isinstance(named, list) else [goal[0]]
    people = [d for d in dict.fromkeys([*named, *rest]) if d and d not in first]
    return [*dict.fromkeys(d for d in first if d), *people[:MAX_WATCHERS]]


def task_audience(db, row: dict) -> list[str]:
    """Who gets a task's versions and entries at once (gmp.md section 7): its creator and assignees,
    then its goal's audience (``goal_audience``), so that everyone working on the goal sees each
    step within seconds, not at the next sync."""
    return goal_audience(db, row["goal_lineage"], first=[row["creator_did"], *row["assigned_to"]])


def _agreed(db, c: Container) -> list[str]:
    """The offers and acceptances a version assigning someone cites (``related.agreed``), in order:
    a participant that saw neither admits the version only after them (gmp.md 4.2)."""
    out = []
    for acceptance in c.related.get("agreed") or []:
        with sql_errors("reading an acceptance"):
            row = db.conn.execute("SELECT offer FROM gmp_entries WHERE did = ?", (acceptance,)).fetchone()
        out += [row[0]] if row and row[0] else []
        out.append(acceptance)
    return out


def push_task_version(push: Push, db, row: dict, c: Container, *, newcomers=()) -> None:
    """A new task version goes to its audience (``task_audience``: creator, assignees, the goal's
    whole audience) and its new assignees; a newcomer gets all it needs."""
    assignees = c.payload.get("assigned_to") or []
    push.add([p for p in dict.fromkeys([*task_audience(db, row), *assignees]) if p not in newcomers],
             [*_agreed(db, c), c.did])
    for peer in newcomers:
        push.add([peer], bundle(db, row["lineage"], extra=(c.did,)))
