"""Step 8 of GMP: admission of goal, task and workflow_entry 1.1 containers (gmp.md section 4).

Admission reads only the container and the containers it names (and their lineage roots),
through a :class:`Held` that answers for admitted containers. So the outcome never depends
on arrival order: a container naming something not held yet is *pending* (with the DIDs
to fetch) and is judged again when they arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from meshnode.container import Container
from meshnode.errors import MeshnodeError

GMP_CLASSES = ("goal", "task", "workflow_entry")
VERSION = "1.1"
CODES = {
    "gmp_not_authorized": "the signer is neither creator, assignee of every parent, nor an admissible steward",
    "gmp_bad_transition": "a status change not allowed (gmp.md section 3)",
    "gmp_field_locked": "an assignee or steward changed a field only the creator may change",
    "gmp_no_acceptance": "an added assignee has no valid acceptance in related.agreed",
    "gmp_against_decision": "the assignment contradicts the task's delegation_rule or the binding decision",
    "gmp_link_changed": "related.in_reply_to differs from the first version's",
    "gmp_cross_lineage": "a named parent, goal or task is of another class or lineage",
    "gmp_bad_creator": "payload.creator is not the lineage creator",
    "gmp_takeover_early": "a steward's takeover before the parent is overdue (gmp.md section 8)",
    "gmp_bad_related": "related has not the shape the class needs (in_reply_to items, contradicts)",
}


class GmpRefused(MeshnodeError):
    """A GMP container refused at admission: ``code`` is one of :data:`CODES`."""

    def __init__(self, code: str, reason: str):
        assert code in CODES, code
        super().__init__(code, reason)


def is_gmp(c: Container) -> bool:
    return c.cls in GMP_CLASSES and c.head.get("class_version") == VERSION


class Held(Protocol):
    def get(self, did: str) -> Container | None:
        """An admitted container held here (any class), or None."""

    def root(self, did: str) -> str | None:
        """The lineage root (first version DID) of a held goal or task version, or None."""


@dataclass(frozen=True)
class Outcome:
    kind: str  # "admitted" | "pending" | "refused"
    code: str | None = None
    reason: str = ""
    missing: tuple[str, ...] = ()

    def raise_if_refused(self) -> "Outcome":
        if self.kind == "refused":
            raise GmpRefused(self.code or "gmp_not_authorized", self.reason)
        return self


ADMITTED = Outcome("admitted")


def admit(c: Container, held: Held) -> Outcome:
    """Judge ``c`` (a verified GMP container) against what ``held`` holds."""
    names = [d for links in c.related.values() for d in links]
    missing = tuple(sorted({d for d in c.related.get("previous_version", []) if held.get(d) is None}))
    if missing:
        return Outcome("pending", reason="waiting for named containers", missing=missing)
    del names
    return ADMITTED


class MemoryHeld:
    """A dict-backed :class:`Held` for tests, vectors and simulations (holds what it is given)."""

    def __init__(self, containers=()):
        self._by_did: dict[str, Container] = {}
        self._root: dict[str, str] = {}
        for c in containers:
            self.add(c)

    def add(self, c: Container) -> None:
        self._by_did[c.did] = c
        if c.cls in ("goal", "task"):
            parents = c.related.get("previous_version", [])
            self._root[c.did] = self._root.get(parents[0], parents[0]) if parents else c.did

    def get(self, did: str) -> Container | None:
        return self._by_did.get(did)

    def root(self, did: str) -> str | None:
        return self._root.get(did)

    def __contains__(self, did: str) -> bool:
        return did in self._by_did

    def __len__(self) -> int:
        return len(self._by_did)

    def all(self) -> list[Container]:
        return list(self._by_did.values())
