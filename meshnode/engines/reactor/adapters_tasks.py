"""The GMP and person adapters (design 3.1): offers to this node, tasks it holds or created that
need a check, and what waits on the person (confirmations, drafts, held commands).

The task reads are GMP's own (``gmp.reads.task_due``: range scans on the open-task indexes, and
``gmp.waiting.offers_to``); the person reads are the gate's status indexes. Every query has a LIMIT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshnode.records.gmp.reads import task_due
from meshnode.records.gmp.waiting import offers_to
from meshnode.engines.reactor.types import Event, Severity, TraceKind

if TYPE_CHECKING:
    from meshnode.base.config.reactor import ReactorConfig
    from meshnode.store.database import Database

HOUR_MS = 3_600_000
MAX_ROWS = 500                  # per person table and for offers, per scan
P1_CONFIRM_MS = 15 * 60_000     # a confirmation this close to expiring is urgent
# What a creator must act on when nobody holds its task. Not "offer_open": that is the normal wait
# for a candidate's answer right after delegating (GMP itself retracts an offer nobody answers).
UNHELD = ("unassigned", "needs_decision", "goal_closed")
UNHELD_GRACE_MS = 10 * 60_000   # a version must stay unheld this long: creating then delegating wakes nobody

TU, BL = TraceKind.TASK_UPDATE, TraceKind.BLOCKER


def offer_events(db: Database, now_ms: int, *, self_did: str) -> list[Event]:
    """task.offer: an unexpired counted delegation naming this node as a candidate that it has
    not answered (no acceptance or refusal signed by it) and that nobody took yet. The receipt
    is not an answer: the node signs it on arrival (delivery, not consent; gmp.md 8)."""
    return [Event(event_type="task.offer", subject=o["lineage"], agent=self_did, severity=Severity.P2,
                  dedupe_key=f"offer:{o['lineage']}:{o['offer']}", suggested_route="agent",
                  required_trace=(TraceKind.RECEIPT,), at_ms=o["timestamp_ms"], source="gmp",
                  summary=f"offer of task {(o['title'] or o['lineage'])[:120]} from {o['offered_by'][:60]}",
                  refs={"lineage": o["lineage"], "offer": o["offer"], "from": o["offered_by"],
                        "expires_ms": o["expires_ms"]})
            for o in offers_to(db, self_did, now_ms, MAX_ROWS)]


def task_events(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
                liveness: dict[str, str] | None = None) -> list[Event]:
    """task.due / overdue / stale / fork / unheld / holder_dead for the tasks this node holds or
    created, from GMP's due states (``task_due``, ``gmp.view.due_state``)."""
    out: list[Event] = []
    stale_ms = int(cfg.stale_task_hours * HOUR_MS)
    for r in task_due(db, now_ms, liveness=liveness):
        lin, due, title = r["lineage"], r["due"], (r.get("title") or r["lineage"])[:120]
        holds, created = self_did in r["assigned_to"], r["creator_did"] == self_did
        refs = {"lineage": lin, "version": r["container_did"], "due": due}

        def ev(etype: str, key: str, sev: Severity, kinds, summary: str, at: int | None, route: str = "agent"):
            out.append(Event(event_type=etype, subject=lin, agent=self_did, severity=sev, dedupe_key=key,
                             suggested_route=route, required_trace=kinds, at_ms=at or r["timestamp_ms"] or now_ms,
                             source="gmp", summary=f"{summary}: {title}", refs=refs))

        if due == "due" and holds:
            ev("task.due", f"task_due:{lin}:{self_did}:{r['due_at_ms']}", Severity.P3, (TU, BL),
               "check due", r["due_at_ms"])
        elif due == "overdue" and holds:
            over = r["overdue_at_ms"]
            ev("task.overdue", f"task_overdue:{lin}:{self_did}:{over}", Severity.P2, (TU, BL), "overdue", over)
            if over is not None and now_ms - over > stale_ms:
                ev("task.stale", f"task_stale:{lin}:{self_did}:{over}", Severity.P2, (TU, BL),
                   f"overdue for more than {cfg.stale_task_hours:g} h", over + stale_ms, route="mentor")
        elif due == "fork" and (holds or created):
            ev("task.fork", f"task_fork:{lin}:{r['forks']}", Severity.P3, (TU,), "forked versions to merge", None)
        elif due in UNHELD and created and now_ms - (r["timestamp_ms"] or now_ms) >= UNHELD_GRACE_MS:
            ev("task.unheld", f"task_{due}:{lin}:{r['container_did']}", Severity.P3, (TU, BL),
               due.replace("_", " "), None)
        elif due == "holder_dead" and created:
            holder = sorted(r["dead"])[0] if r["dead"] else "?"
            ev("task.holder_dead", f"task_holder_dead:{lin}:{holder}", Severity.P2, (TU,),
               f"holder {holder[:60]} is dead", None)
    return out


WORK_WINDOW_MS = 24 * HOUR_MS  # progress and results this recent wake the creator (older: the prompt lists them)


def work_events(db: Database, now_ms: int, *, self_did: str) -> list[Event]:
    """task.progress and task.result: what another signed on a task this node created, so its
    agent looks at once instead of at its next tick. task.progress: the newest counted progress
    entry of the last day per task (one event per entry); task.result: the task completed or
    failed by another in the last day, not reviewed yet (``task_reviews``). Informational: the
    prompt lists the results to review at every tick (``gmp.waiting``), no trace is owed."""
    since = now_ms - WORK_WINDOW_MS
    out: list[Event] = []
    seen: set[str] = set()
    for lineage, did, signer, progress, summary, ts, title, status in db.conn.execute(
            "SELECT e.lineage, e.did, e.signer, e.progress, e.summary, e.timestamp_ms, t.name, t.status FROM containers c"
            " INDEXED BY containers_by_class CROSS JOIN gmp_entries e ON e.did = c.did CROSS JOIN tasks t ON"
            " t.lineage = e.lineage WHERE c.class = 'workflow_entry' AND c.timestamp_ms > ? AND e.kind = 'progress'"
            " AND e.counted = 1 AND e.signer != ? AND t.creator_did = ?"  # the day's entries, by the class index
            " ORDER BY e.timestamp_ms DESC LIMIT ?", (since, self_did, self_did, MAX_ROWS)).fetchall():
        if lineage in seen or status in ("completed", "failed", "abandoned"):
            continue  # the newest step per task; a finished one has its result
        seen.add(lineage)
        pct = f" {round(progress * 100)} %" if isinstance(progress, (int, float)) else ""
        out.append(Event(event_type="task.progress", subject=lineage, agent=self_did, severity=Severity.P3,
                         dedupe_key=f"task_progress:{lineage}:{did}", suggested_route="agent",
                         required_trace=(TraceKind.NONE,), at_ms=ts, source="gmp",
                         summary=f"progress{pct} by {signer[:60]} on {(title or lineage)[:100]}"
                                 + (f": {summary[:120]}" if summary else ""),
                         refs={"lineage": lineage, "entry": did, "by": signer}))
    for lineage, version, status, author, ts, title in db.conn.execute(
            "SELECT t.lineage, t.container_did, t.status, t.author_did, t.timestamp_ms, t.name FROM tasks t"
            " INDEXED BY tasks_finished_by_creator WHERE t.creator_did = ? AND t.timestamp_ms > ? AND t.status IN"
            " ('completed', 'failed') AND t.author_did != ? AND NOT EXISTS (SELECT 1 FROM task_reviews r WHERE"
            " r.lineage = t.lineage AND r.version = t.container_did) ORDER BY t.timestamp_ms DESC LIMIT ?",
            (self_did, since, self_did, MAX_ROWS)).fetchall():
        out.append(Event(event_type="task.result", subject=lineage, agent=self_did, severity=Severity.P2,
                         dedupe_key=f"task_result:{lineage}:{version}", suggested_route="agent",
                         required_trace=(TraceKind.NONE,), at_ms=ts, source="gmp",
                         summary=f"{status} by {author[:60]}, to review (task_review): {(title or lineage)[:100]}",
                         refs={"lineage": lineage, "version": version, "by": author, "status": status}))
    return out


def person_events(db: Database, now_ms: int, *, self_did: str) -> list[Event]:
    """person.confirmation / draft / held: what waits on the person, routed to the operator."""
    q = db.conn.execute
    out: list[Event] = []
    decision = (TraceKind.DECISION,)
    for cid, tool, reason, created, expires in q(
            "SELECT id, tool, reason, created_ms, expires_ms FROM gate_confirmations WHERE status = 'pending'"
            " AND expires_ms > ? ORDER BY id LIMIT ?", (now_ms, MAX_ROWS)):
        sev = Severity.P1 if expires - now_ms <= P1_CONFIRM_MS else Severity.P2
        out.append(Event(event_type="person.confirmation", subject=str(cid), agent=self_did, severity=sev,
                         dedupe_key=f"confirm:{cid}", suggested_route="operator", required_trace=decision,
                         at_ms=created, source="gate", summary=f"confirm {tool}: {reason}"[:200],
                         refs={"confirmation": cid, "expires_ms": expires}))
    for did, path, created in q(
            "SELECT d.id, d.path, d.updated_ms FROM gate_drafts d INDEXED BY reactor_drafts_by_status"
            " WHERE d.status = 'pending' AND EXISTS (SELECT 1 FROM gate_submissions s, json_each(s.drafts) j"
            " WHERE s.session = d.session AND j.value = d.path) ORDER BY d.id LIMIT ?", (MAX_ROWS,)):
        out.append(Event(event_type="person.draft", subject=str(did), agent=self_did, severity=Severity.P3,
                         dedupe_key=f"draft:{did}", suggested_route="operator", required_trace=decision,
                         at_ms=created, source="gate", summary=f"draft of {path} submitted for review"[:200],
                         refs={"draft": did, "path": path}))
    for hid, ctype, reason, created in q(
            "SELECT id, type, reason, created_ms FROM held_commands WHERE status = 'held' ORDER BY id LIMIT ?",
            (MAX_ROWS,)):
        out.append(Event(event_type="person.held", subject=str(hid), agent=self_did, severity=Severity.P3,
                         dedupe_key=f"held:{hid}", suggested_route="operator", required_trace=decision,
                         at_ms=created, source="cognition", summary=f"held {ctype}: {reason}"[:200],
                         refs={"held": hid}))
    return out
