"""Delegation that runs by itself (gmp.md sections 6.3 and 8): which nomination a contested task
goes to, the MeshConsensus value that binds one, and which steward acts for a task whose creator
does not. Pure: the caller passes the tallies, versions and participants it holds and the time.

* **CogConsensus** (6.3 step 2): of the nominations whose voting period is over, the approved one
  with the highest score wins; ties go to the earlier nomination, then the smaller nomination DID.
* **MeshConsensus** (6.3 step 3): the value ``{"kind": "gmp_delegation", "task", "version",
  "nomination"}``, encoded as canonical JSON (sorted keys, no spaces) so that every node that
  requests it proposes the same bytes (the store finds a (task, version)'s values by an index).
  The first value committed for a (task, version) binds.
* **Stewards** (8): the goal's participants except the assignees of the shown version ``V``
  (and the task's creator, who acts at ``overdue_at`` itself), ranked by SHA-256(lineage id ‖ DID of V ‖ participant DID); rank ``k`` acts at
  ``overdue_at + (k + 1) · check_grace_s / 4`` if nothing replaced ``V`` by then.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Iterable

VALUE_KIND = "gmp_delegation"
VALUE_PREFIX = b'{"kind":"gmp_delegation"'  # how every such value begins (canonical JSON, sorted keys)
MAX_VALUE_BYTES = 1024  # three DIDs and the kind; anything longer is no delegation value


@dataclass(frozen=True)
class Tallied:
    """One nomination as its delegator's node tallied it."""

    nomination: str  # the nomination's DID
    timestamp_ms: int  # the nomination's signed time
    state: str  # the tally's state: approved, rejected, disputed, pending
    score: float


def best_nomination(tallied: Iterable[Tallied]) -> Tallied | None:
    """The approved nomination with the highest score (ties: earlier, then smaller DID), or None."""
    approved = [t for t in tallied if t.state == "approved"]
    return min(approved, key=lambda t: (-t.score, t.timestamp_ms, t.nomination), default=None)


def delegation_value(task: str, version: str, nomination: str) -> bytes:
    """The MeshConsensus value asking the committee to bind ``nomination`` for ``(task, version)``."""
    return json.dumps({"kind": VALUE_KIND, "nomination": nomination, "task": task, "version": version},
                      sort_keys=True, separators=(",", ":")).encode("utf-8")


class BadValue(ValueError):
    """A value of kind ``gmp_delegation`` that is not shaped as one."""


def parse_delegation_value(value: bytes) -> dict | None:
    """{"task", "version", "nomination"} of a delegation value; None for any other value; BadValue
    for a value of this kind that is not exactly the canonical form (no two encodings of one choice)."""
    if not value.startswith(VALUE_PREFIX):
        return None
    try:
        data = json.loads(value.decode("utf-8")) if len(value) <= MAX_VALUE_BYTES else None
    except (UnicodeDecodeError, ValueError):
        data = None
    if type(data) is not dict or set(data) != {"kind", "task", "version", "nomination"} or not all(
            type(data[k]) is str and data[k].startswith("did:") for k in ("task", "version", "nomination")):
        raise BadValue("a gmp_delegation value names a task, a version and a nomination, each a DID")
    if delegation_value(data["task"], data["version"], data["nomination"]) != value:
        raise BadValue("a gmp_delegation value is canonical JSON (sorted keys, no spaces)")
    return {k: data[k] for k in ("task", "version", "nomination")}


def stewards(lineage: str, version: str, participants: Iterable[str], assignees: Iterable[str],
             creator: str) -> list[str]:
    """The stewards of version ``version`` of task ``lineage``, rank 0 first. The task's ``creator``
    is not ranked: it takes its task back at ``overdue_at`` itself, and stewards matter when it is
    gone (ranked, a gone creator would hold up every steward after it)."""
    holding = {*assignees, creator}
    people = [p for p in dict.fromkeys(participants) if isinstance(p, str) and p not in holding]
    return sorted(people, key=lambda p: hashlib.sha256((lineage + version + p).encode()).digest())


def steward_acts_at(overdue_at_ms: int, grace_s: int, rank: int) -> int:
    """When the steward at ``rank`` takes the task over (if nothing replaced the version by then)."""
    return overdue_at_ms + (rank + 1) * grace_s * 1000 // 4
