"""Reads of the reactor's rows for the app's reactor actions and the running reactor's status
(design 14): status, events, jobs, one job, explain, unknown addressees. Plain dicts, JSON-able;
run with ``store.read``."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp.reads import rows as row_dicts
from meshnode.records.reactor.scans import last_scan
from meshnode.records.reactor.statuses import HOUR_MS, OPEN_JOB_STATUSES, WAITING_STATUSES
from meshnode.store.database import sql_errors

if TYPE_CHECKING:
    from meshnode.store.database import Database

MAX_LIMIT = 10_000
_JSON_COLUMNS = ("required_trace", "refs", "reason", "events", "context", "report", "missing", "job")
_EVENT = ("e.dedupe_key, e.event_type, e.subject, e.agent, e.severity, e.route, e.required_trace, e.source,"
          " e.summary, e.refs, e.noise, e.at_ms, e.seen_ms, e.last_seen_ms, e.status, e.job_id")
_JOB = ("job_id, agent, priority, reason, status, created_ms, started_ms, ended_ms, exit, max_runtime_s,"
        " required_trace, events, dedupe_key, missing")


class ReactorNotFound(MeshnodeError):
    """No event or job by that key or id."""


def _rows(cur: sqlite3.Cursor) -> list[dict]:
    """The rows as dicts, their JSON columns decoded (a column that is not JSON stays text)."""
    out = row_dicts(cur)
    for d in out:
        for k in _JSON_COLUMNS:
            if isinstance(d.get(k), str):
                try:
                    d[k] = json.loads(d[k])
                except ValueError:
                    pass
    return out


def _limit(n: int) -> int:
    return max(1, min(int(n), MAX_LIMIT))


def status(db: Database, now_ms: int) -> dict:
    """What ``meshnode reactor status`` shows: the last scan (with what the driver recorded of
    it: adapters, errors), pending events per agent, open jobs, leases, cooldowns in force, this
    hour's wakes, escalations not yet sent, unknown addressees."""
    q = db.conn.execute
    with sql_errors("reading the reactor's status"):
        pending = dict(q(f"SELECT agent, count(*) FROM reactor_events INDEXED BY reactor_events_by_status WHERE status"
                         f" IN {WAITING_STATUSES!r} GROUP BY agent ORDER BY agent").fetchall())
        open_jobs = _rows(q(f"SELECT {_JOB} FROM reactor_jobs WHERE status IN {OPEN_JOB_STATUSES!r}"
                            " ORDER BY created_ms LIMIT 100"))
        leases = [{**r, "live": r["expires_ms"] >= now_ms} for r in _rows(q(
            "SELECT agent, job_id, holder, expires_ms FROM reactor_leases ORDER BY agent LIMIT 1000"))]
        cooldowns = _rows(q("SELECT key, until_ms, count FROM reactor_cooldowns WHERE until_ms > ? ORDER BY until_ms"
                            " LIMIT 1000", (now_ms,)))
        wakes = dict(q("SELECT agent, count(*) FROM reactor_jobs INDEXED BY reactor_jobs_by_created WHERE created_ms"
                       " > ? AND status != 'skipped' AND coalesce(json_extract(job, '$.kind'), 'wake') != 'watch'"
                       " GROUP BY agent", (now_ms - HOUR_MS,)).fetchall())  # as the hourly ceiling counts them
        unsent = q("SELECT count(*) FROM reactor_escalations WHERE container_id IS NULL").fetchone()[0]
        by_status = dict(q("SELECT status, count(*) FROM reactor_events GROUP BY status").fetchall())
    return {"last_scan": last_scan(db), "pending": pending, "open_jobs": open_jobs, "leases": leases,
            "cooldowns": cooldowns, "wakes_last_hour": wakes, "wakes_last_hour_total": sum(wakes.values()),
            "unsent_escalations": unsent, "events_by_status": by_status, "unknown": unknown(db)[:20]}


def events(db: Database, *, agent: str | None = None, type: str | None = None, since_ms: int | None = None,
           all: bool = False, limit: int = 100) -> list[dict]:
    """Events newest first with their last decision; noise and unknown addressees only with
    ``all`` (duplicates are never stored: they are counted in metrics)."""
    where, params = [], []
    if agent:
        where.append("e.agent = ?")
        params.append(agent)
    if type:
        where.append("e.event_type = ?")
        params.append(type)
    if since_ms is not None:
        where.append("e.seen_ms >= ?")
        params.append(int(since_ms))
    if not all:
        where.append("e.status NOT IN ('noise', 'unknown')")
    sql = (f"SELECT {_EVENT}, (SELECT d.action FROM reactor_decisions d WHERE d.dedupe_key = e.dedupe_key ORDER BY"
           " d.id DESC LIMIT 1) AS decision, (SELECT d.why FROM reactor_decisions d WHERE d.dedupe_key ="
           " e.dedupe_key ORDER BY d.id DESC LIMIT 1) AS why FROM reactor_events e"
           f"{' WHERE ' + ' AND '.join(where) if where else ''} ORDER BY e.seen_ms DESC, e.id DESC LIMIT ?")
    with sql_errors("listing reactor events"):
        return _rows(db.conn.execute(sql, (*params, _limit(limit))))


def jobs(db: Database, *, status: str | None = None, limit: int = 100) -> list[dict]:
    """Jobs newest first (without their context), optionally of one status."""
    where, params = ("WHERE status = ?", (status,)) if status else ("", ())
    with sql_errors("listing reactor jobs"):
        return _rows(db.conn.execute(f"SELECT {_JOB} FROM reactor_jobs {where} ORDER BY created_ms DESC LIMIT ?",
                                     (*params, _limit(limit))))


def job(db: Database, job_id: str) -> dict:
    """One job: its row with context and report, its events, decisions, escalations and lease."""
    q = db.conn.execute
    with sql_errors("reading a reactor job"):
        found = _rows(q(f"SELECT {_JOB}, context, report FROM reactor_jobs WHERE job_id = ?", (job_id,)))
        if not found:
            raise ReactorNotFound("no_job", f"no reactor job {job_id!r}; `meshnode reactor jobs` lists them")
        out = found[0]
        keys = list(out["events"]) if isinstance(out["events"], list) else []
        out["event_rows"] = _events_by_key(db, keys)
        out["decisions"] = _rows(q("SELECT at_ms, dedupe_key, action, rule, why, job_id FROM reactor_decisions WHERE"
                                   " job_id = ? ORDER BY id", (job_id,)))
        out["escalations"] = _rows(q("SELECT * FROM reactor_escalations WHERE job_id = ? ORDER BY sent_ms", (job_id,)))
        lease = _rows(q("SELECT agent, job_id, holder, expires_ms FROM reactor_leases WHERE job_id = ?", (job_id,)))
        out["lease"] = lease[0] if lease else None
    return out


def _events_by_key(db: Database, keys: list[str]) -> list[dict]:
    out = []
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        out += _rows(db.conn.execute(f"SELECT {_EVENT} FROM reactor_events e WHERE e.dedupe_key IN"
                                     f" ({','.join('?' * len(part))})", part))
    return out


def explain(db: Database, key_or_id: str) -> dict:
    """Every decision on an event (by dedupe key, or a note's container DID) or a job, in order:
    rule, cooldown or budget and its end (in ``why``), job, escalations and failure count."""
    q = db.conn.execute
    with sql_errors("explaining a reactor decision"):
        if q("SELECT 1 FROM reactor_jobs WHERE job_id = ?", (key_or_id,)).fetchone():
            return {"kind": "job", **job(db, key_or_id)}
        key = key_or_id
        rows = _rows(q(f"SELECT {_EVENT} FROM reactor_events e WHERE e.dedupe_key = ?", (key,)))
        if not rows and not key.startswith("note:"):
            key = f"note:{key_or_id}"
            rows = _rows(q(f"SELECT {_EVENT} FROM reactor_events e WHERE e.dedupe_key = ?", (key,)))
        decisions = _rows(q("SELECT at_ms, dedupe_key, action, rule, why, job_id FROM reactor_decisions WHERE"
                            " dedupe_key = ? ORDER BY id", (key,)))
        if not rows and not decisions:
            raise ReactorNotFound("not_found", f"no reactor event or job {key_or_id!r}")
        escalations = _rows(q("SELECT * FROM reactor_escalations WHERE event_key = ? ORDER BY sent_ms", (key,)))
        failures = _rows(q("SELECT agent, count, level, last_job FROM reactor_failures WHERE dedupe_key = ?", (key,)))
        job_ids = sorted({d["job_id"] for d in decisions if d["job_id"]})
        jobs_ = [_rows(q(f"SELECT {_JOB} FROM reactor_jobs WHERE job_id = ?", (j,))) for j in job_ids]
    return {"kind": "event", "event": rows[0] if rows else None, "decisions": decisions,
            "jobs": [j[0] for j in jobs_ if j], "escalations": escalations, "failures": failures}


def unknown(db: Database) -> list[dict]:
    """Addressees no alias resolves (design 5): how many events named each, and the last sighting."""
    with sql_errors("listing unknown addressees"):
        return _rows(db.conn.execute(
            "SELECT agent AS name, count(*) AS events, max(last_seen_ms) AS last_seen_ms,"
            " max(event_type) AS event_type FROM reactor_events INDEXED BY reactor_events_by_status"
            " WHERE status = 'unknown' GROUP BY agent ORDER BY count(*) DESC, agent LIMIT 100"))
