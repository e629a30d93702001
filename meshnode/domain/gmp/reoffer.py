"""A task taken back from its holder (gmp.md section 8.2): to whom it is offered again, and when
the person who owns its goal is told that nobody took it. Pure: the caller passes what it knows
(the goal's participants, who held the task, liveness, the time); ``net.mesh_gmp`` drives the
offer, ``records.inbox`` lists the notice.

Rules kept here:
* the goal's participants come first, all of them in one offer (the first acceptance wins,
  gmp.md 6.1): they already work on the goal. Never this node, never a holder the task was
  taken from, never a peer last heard dead; those heard well first.
* only when no participant is left does the caller look for peers by the task's tags (interest).
* a task still unheld ``UNCLAIMED_AFTER_MS`` after it was taken back is *unclaimed*: the goal's
  owner (and the task's creator) sees it in the inbox until someone holds it or it is abandoned.
"""

from __future__ import annotations

from typing import Iterable, Mapping

MAX_CANDIDATES = 16  # an offer names 1 to 16 candidates (gmp.md 6.1)
UNCLAIMED_AFTER_MS = 10 * 60_000  # as long as an unheld task waits before the reactor wakes its creator
TAKEN_BACK = ("reassigned_dead", "reassigned_overdue")
_ORDER = {"ok": 0, None: 1, "quiet": 1, "stale": 2}  # liveness state -> rank; "dead" is left out


def participants_first(me: str, participants: Iterable[str], removed: Iterable[str],
                       liveness: Mapping[str, str]) -> list[str]:
    """The goal's participants a task taken back is offered to, best first: not ``me``, not a
    removed holder, not dead; heard ok before not heard, before stale; at most MAX_CANDIDATES."""
    gone = {me, *removed}
    people = [p for p in dict.fromkeys(participants) if isinstance(p, str) and p.startswith("did:")
              and p not in gone and liveness.get(p) != "dead"]
    people.sort(key=lambda p: (_ORDER.get(liveness.get(p), 1), p))
    return people[:MAX_CANDIDATES]


def unclaimed(status: str, reason: str | None, holders: Iterable[str], taken_back_ms: int, now_ms: int,
              after_ms: int = UNCLAIMED_AFTER_MS) -> bool:
    """Whether a task shown with ``status``/``reason``/``holders`` since ``taken_back_ms`` is one
    nobody took after it was taken back, at ``now_ms``."""
    return (status == "pending" and reason in TAKEN_BACK and not list(holders)
            and now_ms - taken_back_ms >= after_ms)
