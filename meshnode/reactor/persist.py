"""The reactor's rows: rebuild the core's state at start, write one scan's step, leases.

Every function takes a :class:`~meshnode.store.database.Database` and is run with
``store.read`` / ``store.write`` (a worker thread). ``save_step`` writes everything a step
changed, and prunes what retention allows, in ONE transaction: a crash leaves either the
whole scan or none of it, and a job is always written before it is started (design 2.4, 7.2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshnode.reactor.core import ReactorState, Step
    from meshnode.reactor.settings import ReactorConfig
    from meshnode.store.database import Database

OPEN_JOB_STATUSES = ("queued", "leased", "running", "checking")
LAST_SCAN_KEY = "reactor.last_scan"


def load_state(db: Database, now_ms: int, cfg: ReactorConfig) -> ReactorState:
    raise NotImplementedError


def save_step(db: Database, step: Step, now_ms: int, *, retention_days: float = 30.0) -> None:
    raise NotImplementedError


def record_escalation(db: Database, key: str, container_id: str | None) -> None:
    raise NotImplementedError


def unsent_escalations(db: Database, limit: int = 100) -> list[dict]:
    """Escalation rows written by save_step whose note the driver has not recorded as sent."""
    raise NotImplementedError


def take_lease(db: Database, agent: str, job_id: str, holder: str, now_ms: int, expires_ms: int) -> bool:
    raise NotImplementedError


def release_lease(db: Database, job_id: str) -> bool:
    raise NotImplementedError


def set_job_status(db: Database, job_id: str, status: str, now_ms: int, *, exit: str | None = None,
                   report: dict | None = None) -> None:
    raise NotImplementedError


def interrupted_jobs(db: Database, now_ms: int, holder: str) -> list[str]:
    raise NotImplementedError


def last_scan(db: Database) -> dict | None:
    raise NotImplementedError


def mark_scan(db: Database, now_ms: int, info: dict) -> None:
    raise NotImplementedError
