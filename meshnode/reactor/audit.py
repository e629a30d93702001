"""Reads of the reactor's rows for the CLI and control commands (status, events, jobs, explain)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshnode.store.database import Database


def status(db: Database, now_ms: int) -> dict:
    raise NotImplementedError


def events(db: Database, *, agent: str | None = None, type: str | None = None, since_ms: int | None = None,
           all: bool = False, limit: int = 100) -> list[dict]:
    raise NotImplementedError


def jobs(db: Database, *, status: str | None = None, limit: int = 100) -> list[dict]:
    raise NotImplementedError


def job(db: Database, job_id: str) -> dict:
    raise NotImplementedError


def explain(db: Database, key_or_id: str) -> dict:
    raise NotImplementedError


def unknown(db: Database) -> list[dict]:
    raise NotImplementedError
