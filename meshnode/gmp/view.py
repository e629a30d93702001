"""What a GMP lineage shows (gmp.md sections 4.3, 5, 8): head, task state, counted entries,
holders and due state. Pure functions of admitted containers; every node computes the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from meshnode.container import Container, parse_ms
from meshnode.container.gmp_classes import TASK_TERMINAL
from meshnode.gmp.rules import Held

DEFAULT_GRACE_S = 3600
DEFAULT_PRIORITY = 0.5
GOAL_TERMINAL = frozenset({"completed", "cancelled", "failed"})


def _ms(v) -> int | None:
    return parse_ms(v) if v is not None else None


def shown_head(heads: Sequence[Container], creator: str) -> Container:
    """The head every node shows (section 5): creator first, then later timestamp, then larger DID."""
    return max(heads, key=lambda h: (h.sender_did == creator, h.timestamp_ms, h.did))


@dataclass(frozen=True)
class TaskState:
    status: str
    assigned_to: tuple[str, ...]
    progress: float | None
    deadline_ms: int | None
    next_check_ms: int | None
    grace_ms: int
    due_at_ms: int | None
    overdue_at_ms: int | None
    rule: str
    reason: str | None


def task_state(version: Container) -> TaskState:
    p = version.payload
    deadline, next_check = _ms(p.get("deadline")), _ms(p.get("next_check_at"))
    grace_ms = p.get("check_grace_s", DEFAULT_GRACE_S) * 1000
    assigned = tuple(p.get("assigned_to", ()))
    due = None
    if assigned and p["status"] not in TASK_TERMINAL:
        times = [t for t in (deadline, next_check) if t is not None]
        due = min(times) if times else None
    return TaskState(p["status"], assigned, p.get("progress"), deadline, next_check, grace_ms, due,
                     None if due is None else due + grace_ms, p.get("delegation_rule", "creator"), p.get("reason"))


def goal_fields(version: Container, creator: str | None = None) -> dict:
    p = version.payload
    return {"title": p["title"], "status": p["status"], "priority": p.get("priority", DEFAULT_PRIORITY)}


def counts(entry: Container, held: Held) -> tuple[bool, str | None]:
    return True, None


@dataclass(frozen=True)
class HolderSpan:
    assignee: str
    from_version: str
    to_version: str | None
    since_ms: int
    until_ms: int | None
    ended: str | None


def holder_spans(path: Sequence[Container]) -> list[HolderSpan]:
    return []


def due_state(*, status: str, assigned_to, due_at_ms: int | None, overdue_at_ms: int | None,
              liveness: dict[str, str], offer_open: bool, forks: int, goal_status: str | None, rule: str,
              now_ms: int) -> str | None:
    return None
