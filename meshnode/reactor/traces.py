"""Trace check (design 10.1, 10.2): what durable trace a woken agent left, and whether its
final report's claims exist. Reads only; run with ``store.read``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshnode.reactor.types import FinalReport, Trace, TraceCheck
    from meshnode.store.database import Database


def find(db: Database, check: TraceCheck, now_ms: int, *, self_did: str,
         phrases: tuple[str, ...] | None = None) -> list[Trace]:
    raise NotImplementedError


def check_report(db: Database, report: FinalReport, since_ms: int, *, self_did: str, agent: str) -> tuple[str, ...]:
    raise NotImplementedError
