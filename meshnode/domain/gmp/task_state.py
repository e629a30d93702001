"""What one task version says on its own (gmp.md section 8): its status, holders, progress, and
when it is due and overdue. Pure; both admission (``gmp.rules``: a steward's takeover waits for
overdue) and the view (``gmp.view``) read it."""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.base.container import Container, parse_ms
from meshnode.base.container.gmp_classes import TASK_TERMINAL

DEFAULT_GRACE_S = 3600
DEFAULT_RULE = "creator"


def _ms(v) -> int | None:
    return parse_ms(v) if v is not None else None


@dataclass(frozen=True)
class TaskState:
    status: str
    assigned_to: tuple[str, ...]
    progress: float | None
    deadline_ms: int | None
    next_check_ms: int | None
    grace_ms: int
    due_at_ms: int | None  # min(deadline, next_check_at) while held and not finished (section 8)
    overdue_at_ms: int | None  # due_at + check_grace_s
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
                     None if due is None else due + grace_ms, p.get("delegation_rule", DEFAULT_RULE),
                     p.get("reason"))
