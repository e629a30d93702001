"""A wake job's run as the driver records it (design 7.2): the agent's lease, the job's status
moves, and the runs a stopped process left behind. Every function takes a
:class:`~meshnode.store.database.Database` and is run with ``store.read`` / ``store.write``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from meshnode.records.reactor.statuses import JOB_STATUSES

if TYPE_CHECKING:
    from meshnode.store.database import Database

_LEASE = ("INSERT INTO reactor_leases (agent, job_id, holder, expires_ms) VALUES (?, ?, ?, ?)"
          " ON CONFLICT (agent) DO UPDATE SET job_id = excluded.job_id, holder = excluded.holder,"
          " expires_ms = excluded.expires_ms WHERE reactor_leases.expires_ms < ? OR reactor_leases.holder = excluded.holder")


def take_lease(db: Database, agent: str, job_id: str, holder: str, now_ms: int, expires_ms: int) -> bool:
    """Take ``agent``'s lease for ``job_id`` unless a live one of another holder exists (design
    7.2; a driver never asks while it runs a job of that agent, so a lease of its own is one a
    failed release left behind). One write
    transaction: the upsert replaces only an expired lease, and the job runs only if the row
    then names it, so two processes scanning at once wake an agent at most once. A won lease
    moves a queued job to ``leased``."""
    with db.transaction() as conn:
        conn.execute(_LEASE, (agent, job_id, holder, expires_ms, now_ms))
        row = conn.execute("SELECT job_id, holder FROM reactor_leases WHERE agent = ?", (agent,)).fetchone()
        won = row is not None and row[0] == job_id and row[1] == holder
        if won:
            conn.execute("UPDATE reactor_jobs SET status = 'leased' WHERE job_id = ? AND status = 'queued'", (job_id,))
        return won


def release_lease(db: Database, job_id: str) -> bool:
    """Drop the lease held for ``job_id`` (the run ended, or ``meshnode reactor release``)."""
    with db.transaction() as conn:
        return conn.execute("DELETE FROM reactor_leases WHERE job_id = ?", (job_id,)).rowcount > 0


def set_job_status(db: Database, job_id: str, status: str, now_ms: int, *, exit: str | None = None,
                   report: dict | None = None) -> None:
    """The driver's moves of a job: ``running`` (sets started_ms), and the run's end (``exit``
    and ``report`` given: sets ended_ms). Terminal statuses come from the core's step."""
    if status not in JOB_STATUSES:
        raise ValueError(f"unknown job status {status!r}")
    with db.transaction() as conn:
        conn.execute(
            "UPDATE reactor_jobs SET status = ?, started_ms = CASE WHEN ? = 'running' THEN coalesce(started_ms, ?)"
            " ELSE started_ms END, ended_ms = CASE WHEN ? IS NOT NULL THEN ? ELSE ended_ms END,"
            " exit = coalesce(?, exit), report = coalesce(?, report) WHERE job_id = ?",
            (status, status, now_ms, exit, now_ms, exit,
             json.dumps(report, sort_keys=True, default=str) if report is not None else None, job_id))


def parse_holder(holder: str) -> tuple[str, str, str]:
    """``<pid>@<hostname>:<boot ms>`` -> (pid, hostname, boot)."""
    pid, _, rest = holder.partition("@")
    host, _, boot = rest.rpartition(":")
    return pid, host, boot


def interrupted_jobs(db: Database, now_ms: int, holder: str, running: frozenset[str] = frozenset()) -> list[str]:
    """At start (design 7.2): the jobs ``leased``/``running`` whose lease expired, is gone, or is
    held by this host under another boot. Marks them (exit ``interrupted``, ended_ms, lease
    dropped) and returns their ids; the driver feeds ``RunEnded(exit="interrupted")`` for each
    to the core, which puts their events back to pending once and sets the status. ``running``:
    the jobs the caller is running itself, never interrupted (their end will come)."""
    _, my_host, my_boot = parse_holder(holder)
    out = []
    with db.transaction() as conn:
        for job_id, agent, lease_holder, expires in conn.execute(
                "SELECT j.job_id, j.agent, l.holder, l.expires_ms FROM reactor_jobs j LEFT JOIN reactor_leases l"
                " ON l.job_id = j.job_id WHERE j.status IN ('leased', 'running') ORDER BY j.created_ms").fetchall():
            if job_id in running:
                continue
            if lease_holder is not None and expires >= now_ms:
                _, host, boot = parse_holder(lease_holder)
                if host != my_host or boot == my_boot:
                    continue  # live: another host's, or a process of this boot (a concurrent scan --once)
            conn.execute("UPDATE reactor_jobs SET exit = 'interrupted', ended_ms = coalesce(ended_ms, ?)"
                         " WHERE job_id = ?", (now_ms, job_id))
            conn.execute("DELETE FROM reactor_leases WHERE job_id = ?", (job_id,))
            out.append(job_id)
    return out
