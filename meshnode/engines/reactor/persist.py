"""The core's state in the reactor's rows: rebuild it at start, write one scan's step, record
the escalation notes sent.

Every function takes a :class:`~meshnode.store.database.Database` and is run with
``store.read`` / ``store.write`` (a worker thread). ``save_step`` writes everything a step
changed, and prunes what retention allows, in ONE transaction: a crash leaves either the
whole scan or none of it, and a job is always written before it is started (design 2.4, 7.2).
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from meshnode.records.gmp.reads import rows as row_dicts
from meshnode.records.reactor.statuses import DAY_MS, HOUR_MS, OPEN_JOB_STATUSES, WAITING_STATUSES
from meshnode.store.database import sql_errors

if TYPE_CHECKING:
    from meshnode.engines.reactor.types import ReactorState, Step
    from meshnode.base.config.reactor import ReactorConfig
    from meshnode.engines.reactor.types import Event, WakeJob
    from meshnode.store.database import Database

NOISE_DECISIONS_DAYS = 3            # noise (and duplicate) decisions are kept 3 days (design 11)
PRUNE_BATCH = 5_000                 # rows per table per scan: a backlog is pruned over several scans
_OPEN = f"({', '.join(repr(s) for s in OPEN_JOB_STATUSES)})"
_WAITING = f"({', '.join(repr(s) for s in WAITING_STATUSES)})"


# --- rows <-> core types --------------------------------------------------------------------


def event_from_row(r: sqlite3.Row | tuple | dict) -> Event:
    """An Event from a reactor_events row (columns as selected by ``_EVENT_COLUMNS``)."""
    from meshnode.engines.reactor.types import Event, Severity, TraceKind

    (key, etype, subject, agent, severity, route, required, source, summary, refs, noise, at_ms) = r
    return Event(event_type=etype, subject=subject, agent=agent, severity=Severity(severity), dedupe_key=key,
                 suggested_route=route, required_trace=tuple(TraceKind(k) for k in json.loads(required)),
                 at_ms=at_ms, source=source, summary=summary, refs=json.loads(refs or "{}"), noise=noise or "")


_EVENT_COLUMNS = ("dedupe_key, event_type, subject, agent, severity, route, required_trace, source, summary,"
                  " refs, noise, at_ms")


def _event_values(e: Event) -> tuple:
    return (e.dedupe_key, e.event_type, e.subject, e.agent, int(e.severity), e.suggested_route,
            json.dumps([k.value for k in e.required_trace]), e.source, e.summary,
            json.dumps(dict(e.refs), sort_keys=True), e.noise)


def _job_json(job: WakeJob) -> str:
    """The WakeJob as JSON, without its context (kept once, in the context column)."""
    from meshnode.engines.reactor.types import job_to_dict

    d = job_to_dict(job)
    d.pop("context", None)
    return json.dumps(d, sort_keys=True, default=str)


def _job_from_json(text: str, status: str, context: str | None) -> WakeJob:
    from meshnode.engines.reactor.types import job_from_dict

    d = json.loads(text)
    d["status"] = status  # the column is the truth: the driver moves it (leased, running) after the step
    d["context"] = json.loads(context) if context else {}
    return job_from_dict(d)


# --- load -------------------------------------------------------------------------------------


def load_state(db: Database, now_ms: int, cfg: ReactorConfig) -> ReactorState:
    """The core's state as the rows say at ``now_ms`` (design 2.4): seen keys within
    ``dedupe_days`` of their last sighting, pending and digest events by target, open jobs and
    the events of open jobs and of failures, live cooldowns (the core derives its self.check
    schedule from ``check:<agent>``), failure counts, escalation keys and this hour's wakes."""
    from meshnode.engines.reactor.types import ReactorState

    q = db.conn.execute
    with sql_errors("loading the reactor's state"):
        seen = dict(q("SELECT dedupe_key, last_seen_ms FROM reactor_events WHERE last_seen_ms >= ?",
                      (now_ms - int(cfg.dedupe_days * DAY_MS),)).fetchall())
        pending: dict[str, list[Event]] = {}
        for status, row in ((r[0], r[1:]) for r in q(
                f"SELECT status, {_EVENT_COLUMNS} FROM reactor_events INDEXED BY reactor_events_by_status WHERE"
                f" status IN {_WAITING} ORDER BY severity, at_ms, id").fetchall()):
            e = event_from_row(row)
            pending.setdefault(_target(e, status, cfg), []).append(e)
        jobs = {job_id: _job_from_json(text, status, context) for job_id, text, status, context in q(
            f"SELECT job_id, job, status, context FROM reactor_jobs WHERE status IN {_OPEN} ORDER BY created_ms")}
        events: dict[str, Event] = {}
        for row in q(f"SELECT {_EVENT_COLUMNS} FROM reactor_events e WHERE e.job_id IN (SELECT job_id FROM"
                     f" reactor_jobs WHERE status IN {_OPEN}) OR e.dedupe_key IN (SELECT dedupe_key FROM"
                     " reactor_failures)"):
            e = event_from_row(row)
            events[e.dedupe_key] = e
        cooldowns = {k: (u, c) for k, u, c in q("SELECT key, until_ms, count FROM reactor_cooldowns WHERE"
                                                 " until_ms > ?", (now_ms,))}
        failures = {(a, k): (c, lv, j) for a, k, c, lv, j in q(
            "SELECT agent, dedupe_key, count, level, last_job FROM reactor_failures")}
        escalated = {k for (k,) in q("SELECT key FROM reactor_escalations")}
        wakes = [(c, a) for c, a in q(  # runs, not the watches of an escalation (they run nobody)
            "SELECT created_ms, agent FROM reactor_jobs INDEXED BY reactor_jobs_by_created WHERE created_ms > ? AND"
            " status != 'skipped' AND coalesce(json_extract(job, '$.kind'), 'wake') != 'watch' ORDER BY created_ms",
            (now_ms - HOUR_MS,))]
    return ReactorState(seen=seen, pending=pending, cooldowns=cooldowns, jobs=jobs, failures=failures,
                        escalated=escalated, wakes=wakes, events=events, next_checks={})


def _target(e: Event, status: str, cfg: ReactorConfig) -> str:
    """Whose pending list a waiting event is on (the core's routing, design 6.1): its agent's, or
    the coordinator's for a coordinator route, a digest item of a non-local agent, or a route
    naming another local agent."""
    from meshnode.engines.reactor.limits import rule_for

    local = cfg.local_agents
    if status == "digest":
        return e.agent if e.agent in local else cfg.coordinator
    _rule, route, _off = rule_for(e.event_type, e.suggested_route, cfg)
    if route == "coordinator":
        return cfg.coordinator
    if route not in ("agent", "mentor", "operator") and route in local:
        return route
    return e.agent


# --- save -------------------------------------------------------------------------------------


def save_step(db: Database, step: Step, now_ms: int, *, retention_days: float = 30.0) -> None:
    """Write one step in one transaction: new events, decisions (not duplicates), event statuses
    and sightings, jobs, cooldowns, failures, escalation rows, the person's lines (``for_person``);
    then prune what retention allows."""
    with db.transaction() as conn:
        _write_step(conn, step, now_ms)
        prune(conn, now_ms, retention_days=retention_days)


def _write_step(conn: sqlite3.Connection, step: Step, now_ms: int) -> None:
    delta = step.changed
    statuses = delta.event_status
    conn.executemany(
        "INSERT INTO reactor_events (dedupe_key, event_type, subject, agent, severity, route, required_trace,"
        " source, summary, refs, noise, at_ms, seen_ms, last_seen_ms, status, job_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO UPDATE SET"
        " last_seen_ms = excluded.last_seen_ms",
        [(*_event_values(e), e.at_ms, now_ms, now_ms, *statuses.get(e.dedupe_key, ("pending", None)))
         for e in step.accepted])
    conn.executemany("UPDATE reactor_events SET status = ?, job_id = ? WHERE dedupe_key = ?",
                     [(st, job, key) for key, (st, job) in statuses.items()])
    conn.executemany("UPDATE reactor_events SET last_seen_ms = ? WHERE dedupe_key = ?",
                     [(now_ms, key) for key in delta.seen_again])
    conn.executemany(
        "INSERT INTO reactor_decisions (at_ms, dedupe_key, action, rule, why, job_id) VALUES (?, ?, ?, ?, ?, ?)",
        [(d.at_ms, d.dedupe_key, d.action, d.rule, d.why or "", d.job_id)
         for d in step.decisions if d.action != "duplicate"])
    conn.executemany(
        "INSERT INTO reactor_jobs (job_id, agent, priority, reason, status, created_ms, max_runtime_s,"
        " required_trace, events, dedupe_key, context, missing, job) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (job_id) DO UPDATE SET priority = excluded.priority, reason = excluded.reason,"
        # the core's queued never undoes the driver's leased/running (the core learns of those by RunEnded)
        " status = CASE WHEN excluded.status = 'queued' AND reactor_jobs.status IN ('leased', 'running')"
        " THEN reactor_jobs.status ELSE excluded.status END, required_trace = excluded.required_trace,"
        " events = excluded.events, context = excluded.context, missing = coalesce(excluded.missing,"
        " reactor_jobs.missing), job = excluded.job,"
        " ended_ms = CASE WHEN excluded.status IN ('ok', 'failed', 'interrupted', 'skipped') THEN"
        " coalesce(reactor_jobs.ended_ms, ?) ELSE reactor_jobs.ended_ms END",
        [_job_values(j) + (now_ms,) for j in delta.jobs])
    for key, (until, count) in delta.cooldowns.items():
        if until == 0:
            conn.execute("DELETE FROM reactor_cooldowns WHERE key = ?", (key,))
        else:
            conn.execute("INSERT INTO reactor_cooldowns (key, until_ms, count) VALUES (?, ?, ?) ON CONFLICT (key)"
                         " DO UPDATE SET until_ms = excluded.until_ms, count = excluded.count", (key, until, count))
    for (agent, key), (count, level, last_job) in delta.failures.items():
        if count == 0:
            conn.execute("DELETE FROM reactor_failures WHERE agent = ? AND dedupe_key = ?", (agent, key))
        else:
            conn.execute("INSERT INTO reactor_failures (agent, dedupe_key, count, level, last_job) VALUES"
                         " (?, ?, ?, ?, ?) ON CONFLICT (agent, dedupe_key) DO UPDATE SET count = excluded.count,"
                         " level = excluded.level, last_job = excluded.last_job", (agent, key, count, level, last_job))
    conn.executemany(
        "INSERT INTO reactor_escalations (key, agent, to_id, level, event_key, event_type, subject, text, job_id,"
        " sent_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        [(x.key, x.agent, x.to_id, x.level, x.event_key, x.event_type, x.subject, x.text, x.job_id, x.at_ms)
         for x in step.escalations])
    conn.executemany(
        "INSERT INTO reactor_person_lines (event_key, agent, event_type, subject, summary, refs, at_ms, created_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_key) DO NOTHING",
        [(e.dedupe_key, e.agent, e.event_type, e.subject, e.summary, json.dumps(dict(e.refs), sort_keys=True),
          e.at_ms, now_ms) for e in step.for_person])


def _job_values(j: WakeJob) -> tuple:
    missing = getattr(j, "missing", None)
    return (j.job_id, j.agent, int(j.priority), json.dumps(list(j.reason)), j.status, j.created_ms,
            int(j.max_runtime_s), json.dumps([k.value for k in j.required_trace]), json.dumps(list(j.events)),
            j.dedupe_key, json.dumps(j.context, sort_keys=True, default=str) if j.context is not None else None,
            json.dumps(list(missing)) if missing else None, _job_json(j))


def prune(conn: sqlite3.Connection, now_ms: int, *, retention_days: float) -> dict[str, int]:
    """Retention (design 11), bounded per call: events and decisions older than ``retention_days``
    except those of open jobs; noise decisions after 3 days; closed jobs, escalations and
    failures-free expired cooldowns likewise. Returns the rows deleted per table."""
    cutoff = now_ms - int(retention_days * DAY_MS)
    noise_cutoff = now_ms - NOISE_DECISIONS_DAYS * DAY_MS
    out = {}
    out["events"] = conn.execute(
        "DELETE FROM reactor_events WHERE id IN (SELECT id FROM reactor_events WHERE last_seen_ms < ?"
        f" AND (job_id IS NULL OR job_id NOT IN (SELECT job_id FROM reactor_jobs WHERE status IN {_OPEN}))"
        " AND dedupe_key NOT IN (SELECT dedupe_key FROM reactor_failures) LIMIT ?)",
        (cutoff, PRUNE_BATCH)).rowcount
    out["decisions"] = conn.execute(
        "DELETE FROM reactor_decisions WHERE id IN (SELECT id FROM reactor_decisions WHERE at_ms < ?"
        f" AND (job_id IS NULL OR job_id NOT IN (SELECT job_id FROM reactor_jobs WHERE status IN {_OPEN})) LIMIT ?)",
        (cutoff, PRUNE_BATCH)).rowcount
    out["decisions"] += conn.execute(
        "DELETE FROM reactor_decisions WHERE id IN (SELECT id FROM reactor_decisions WHERE at_ms < ? AND"
        " action IN ('noise', 'duplicate') LIMIT ?)", (noise_cutoff, PRUNE_BATCH)).rowcount
    out["jobs"] = conn.execute(
        "DELETE FROM reactor_jobs WHERE job_id IN (SELECT job_id FROM reactor_jobs WHERE created_ms < ? AND"
        f" status NOT IN {_OPEN} LIMIT ?)", (cutoff, PRUNE_BATCH)).rowcount
    out["escalations"] = conn.execute(
        "DELETE FROM reactor_escalations WHERE key IN (SELECT key FROM reactor_escalations WHERE sent_ms < ?"
        " LIMIT ?)", (cutoff, PRUNE_BATCH)).rowcount
    out["person_lines"] = conn.execute(  # read by the person; unread ones wait for them
        "DELETE FROM reactor_person_lines WHERE id IN (SELECT id FROM reactor_person_lines WHERE read_ms < ?"
        " LIMIT ?)", (cutoff, PRUNE_BATCH)).rowcount
    out["cooldowns"] = conn.execute("DELETE FROM reactor_cooldowns WHERE until_ms <= ?", (now_ms,)).rowcount
    return out


# --- escalations ------------------------------------------------------------------------------


def record_escalation(db: Database, key: str, container_id: str | None) -> None:
    """The note of escalation ``key`` was sent (``container_id``: its container, or None when it
    could not be: the row stays listed by unsent_escalations)."""
    with db.transaction() as conn:
        conn.execute("UPDATE reactor_escalations SET container_id = ? WHERE key = ?", (container_id, key))


def unsent_escalations(db: Database, limit: int = 100) -> list[dict]:
    """Escalation rows written by save_step whose note the driver has not recorded as sent
    (the node stopped between the two): the driver sends them at its next scan."""
    with sql_errors("reading unsent escalations"):
        return row_dicts(db.conn.execute(
            "SELECT key, agent, to_id, level, event_key, event_type, subject, text, job_id, sent_ms FROM"
            " reactor_escalations WHERE container_id IS NULL ORDER BY sent_ms LIMIT ?", (limit,)))
