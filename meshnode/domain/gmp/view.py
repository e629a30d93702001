"""What a GMP lineage shows (gmp.md sections 4.3, 5, 8): the shown head, the task's state, whether
an entry counts, who held the task, and what needs doing now. Pure functions of admitted
containers (and, for the due state, of the local liveness and clock): every node holding the
same containers computes the same view. What one task version says on its own (its state, due and
overdue times) is :mod:`meshnode.domain.gmp.task_state`, which admission reads too."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from meshnode.base.container import Container, parse_ms
from meshnode.base.container.gmp_classes import TASK_TERMINAL
from meshnode.domain.gmp.rules import Held, _is, ancestry, delegators, lineage_of, offer_fault
from meshnode.domain.gmp.task_state import TaskState, task_state  # noqa: F401  (part of this module's API)

DEFAULT_PRIORITY = 0.5
GOAL_TERMINAL = frozenset({"completed", "cancelled", "failed"})
HOLDER_ENDS = frozenset({"released", "reassigned_dead", "reassigned_overdue"})
DUE_STATES = ("unassigned", "holder_dead", "overdue", "due", "offer_open", "needs_decision", "fork", "goal_closed")


def _takeover_like(h: Container, creator: str) -> bool:
    """A steward's takeover as it looks on its own: not by the creator, reason reassigned_overdue."""
    return h.sender_did != creator and h.payload.get("reason") == "reassigned_overdue"


def shown_head(heads: Sequence[Container], creator: str) -> Container:
    """The head every node shows (section 5): a head by the lineage creator first; then a head that is
    not a steward's takeover (a holder's head beats a concurrent takeover: earlier, it checked in before
    the steward acted; later, it is later anyway); then the later timestamp; then the larger DID."""
    return max(heads, key=lambda h: (h.sender_did == creator, not _takeover_like(h, creator), h.timestamp_ms,
                                     h.did))


def heads_of(versions: Sequence[Container]) -> list[Container]:
    """The versions no other version in ``versions`` replaces."""
    replaced = {d for v in versions for d in v.related.get("previous_version", ())}
    return [v for v in versions if v.did not in replaced]


def goal_fields(version: Container, creator: str | None = None) -> dict:
    """The goal row's fields from its shown version; ``creator`` (the lineage creator) joins the
    participants, as it always is one."""
    p, rel = version.payload, version.related
    participants = list(p.get("participants", ()))
    if creator and creator not in participants:
        participants.insert(0, creator)
    return {"title": p["title"], "status": p["status"], "description": p.get("description"),
            "priority": p.get("priority", DEFAULT_PRIORITY), "success_criteria": list(p.get("success_criteria", ())),
            "constraints": list(p.get("constraints", ())), "expected_outcome": p.get("expected_outcome"),
            "ethical_context": p.get("ethical_context"), "participants": participants,
            "audience": p.get("audience", "participants"), "tags": list(version.head.get("tags", ())),
            "parent_goal": (rel.get("in_reply_to") or [None])[0], "depends_on": list(rel.get("depends_on", ())),
            "see_also": list(rel.get("see_also", ()))}


# --- counting (section 4.3) ------------------------------------------------------------------------

ALWAYS_SHOWN = frozenset({"reflection", "ethical_result"})


def _version_of(held: Held, did: str | None, lineage: str) -> Container | None:
    v = held.get(did) if did else None
    if v is None or v.cls != "task" or held.root(v.did) != lineage:
        return None
    return v


def counts(entry: Container, held: Held) -> tuple[bool, str | None]:
    """Whether an admitted entry counts, and the reason when it does not (section 4.3). Reads only the
    containers the entry names, which admission made sure are held."""
    p, signer = entry.payload, entry.sender_did
    kind, about = p["entry_type"], entry.related["in_reply_to"][0]
    if kind.startswith("x-"):
        return False, "extension_kind"
    if kind in ALWAYS_SHOWN:
        return True, None
    if kind in ("progress", "execution_log", "blocker"):
        v = _version_of(held, p.get("task_version"), about)
        if v is None:
            return False, "no_version"
        return (True, None) if signer in v.payload.get("assigned_to", ()) else (False, "not_assignee")
    if kind == "delegation":
        return _counts_delegation(entry, held, about)
    if kind in ("acceptance", "refusal"):
        offer = held.get(p["offer"])
        if offer is None or not _is(offer, "workflow_entry") or \
                offer_fault(offer, about, offer.payload.get("candidates", [None])[0]) is not None:
            nomination = offer is not None and offer.payload.get("nomination") is True
            return False, "nomination" if nomination else "not_offer"
        if signer not in offer.payload["candidates"]:
            return False, "not_candidate"
        if entry.timestamp_ms > parse_ms(offer.payload["expires_at"]):
            return False, "offer_expired"
        return True, None
    if kind == "receipt":
        r = held.get(p["received"])
        if _is(r, "workflow_entry") and r.payload["entry_type"] == "delegation":
            ok = signer in r.payload["candidates"] and r.related.get("in_reply_to") == [about]
        else:
            ok = _version_of(held, p["received"], about) is not None and signer in r.payload.get("assigned_to", ())
        return (True, None) if ok else (False, "not_recipient")
    if kind == "rollback":
        first = held.get(about)
        owner = first is not None and signer == first.sender_did
        named = [held.get(d) for d in entry.related.get("contradicts", ())]
        ok = owner or all(c is not None and c.sender_did == signer for c in named)
        return (True, None) if ok else (False, "not_owner")
    return True, None  # blocker etc. handled above; nothing else is admitted


def _counts_delegation(entry: Container, held: Held, about: str) -> tuple[bool, str | None]:
    p, signer = entry.payload, entry.sender_did
    v = _version_of(held, p["task_version"], about)
    if v is None:
        return False, "no_version"
    if p.get("nomination") is True:
        goal = held.get(v.related["in_reply_to"][0])
        if goal is not None and signer == goal.sender_did:
            return True, None
        for d in entry.related.get("see_also", ()):
            g = held.get(d)
            if g is not None and g.cls == "goal" and held.root(d) == v.related["in_reply_to"][0] and \
                    signer in g.payload.get("participants", ()):
                return True, None
        return False, "not_participant"
    root, first = lineage_of(v, held)
    if signer == first.sender_did:
        return True, None
    # a steward is a delegator only through a takeover it signed in this lineage: a Held that can
    # tell it signed none spares the walk of the whole lineage (anyone may add delegation entries)
    signed = getattr(held, "signed_in", None)
    if signed is not None and not signed(root, signer):
        return False, "not_delegator"
    return (True, None) if signer in delegators([v], first.sender_did, held) else (False, "not_delegator")


def shown_progress(version: Container, entries: Sequence[tuple[Container, bool]]) -> float | None:
    """The progress shown (section 4.3): the newest of the version's own and of the counted progress
    entries signed by its current assignees. ``entries``: (entry, counted) pairs of the lineage."""
    best = (version.timestamp_ms, version.payload.get("progress")) if "progress" in version.payload else None
    holders = set(version.payload.get("assigned_to", ()))
    for e, counted in entries:
        if counted and e.payload.get("entry_type") == "progress" and e.sender_did in holders:
            if best is None or e.timestamp_ms > best[0]:
                best = (e.timestamp_ms, e.payload["progress"])
    return None if best is None else best[1]


# --- joining a fork (section 5) ----------------------------------------------------------------------

EXECUTION_FIELDS = ("status", "progress", "next_check_at", "metrics", "notes")


@dataclass(frozen=True)
class Join:
    base: Container  # the creator's best head: the creator-owned fields, goal, tags, dependencies
    payload: dict  # the joining version's payload (``reason: merged``)
    contradicts: tuple[str, ...]  # the versions a rollback entry undoes (the reassignment of a finisher), oldest first


def join(heads: Sequence[Container], creator: str, held: Held) -> Join | None:
    """What the creator's join of ``heads`` says (section 5), or None when no head is the creator's.

    The creator's fields come from its best head. When that head no longer names a holder whose
    concurrent head is ``completed`` (the holder finished while being reassigned), the join keeps the
    completion: the execution fields and ``assigned_to`` of the newest such head (so the assignees
    the creator added since are removed), and ``contradicts`` lists the creator's versions on its
    side of the fork (in the ancestry of its head, not of the completion) from the first that no
    longer names the finisher (the reassignment) on, for a ``rollback`` entry. Otherwise the execution fields come from the newest head of an assignee the creator's
    head still names."""
    mine = [h for h in heads if h.sender_did == creator]
    if not mine:
        return None
    base = shown_head(mine, creator)
    payload = dict(base.payload)
    holders = payload.get("assigned_to") or []
    finished = [h for h in heads if h.sender_did != creator and h.sender_did not in holders
                and h.payload.get("status") == "completed" and h.sender_did in (h.payload.get("assigned_to") or ())]
    contradicts: tuple[str, ...] = ()
    if finished:
        newest = max(finished, key=lambda h: (h.timestamp_ms, h.did))
        for k in (*EXECUTION_FIELDS, "assigned_to"):
            payload.pop(k, None)
            if k in newest.payload:
                payload[k] = newest.payload[k]
        kept = ancestry([newest], held)
        side = sorted((v for v in ancestry([base], held).values() if v.did not in kept and v.sender_did == creator),
                      key=lambda v: (v.timestamp_ms, v.did))
        # from the reassignment on: the creator's edits before it (still naming the finisher) are kept
        removal = next((i for i, v in enumerate(side) if newest.sender_did not in (v.payload.get("assigned_to") or ())),
                       len(side))
        contradicts = tuple(v.did for v in side[removal:])
    else:
        work = [h for h in heads if h.sender_did in holders and h.sender_did != creator]
        if work:
            newest = max(work, key=lambda h: (h.timestamp_ms, h.did))
            for k in EXECUTION_FIELDS:
                if k in newest.payload:
                    payload[k] = newest.payload[k]
    payload["reason"] = "merged"
    return Join(base, payload, contradicts)


# --- holders (section 8, history) -------------------------------------------------------------------


@dataclass(frozen=True)
class HolderSpan:
    assignee: str
    from_version: str
    to_version: str | None
    since_ms: int
    until_ms: int | None
    ended: str | None  # released, reassigned_dead, reassigned_overdue, completed, failed, abandoned, removed


def holder_spans(path: Sequence[Container]) -> list[HolderSpan]:
    """Who held the task along ``path`` (versions from the first to the shown head, in order), and how
    each holding ended: the version that dropped the holder or finished the task."""
    spans: list[HolderSpan] = []
    open_: dict[str, tuple[str, int]] = {}  # assignee -> (from version, since)
    for v in path:
        spans += holder_step(open_, v)
    for who, (start, since) in open_.items():
        spans.append(HolderSpan(who, start, None, since, None, None))
    return sorted(spans, key=lambda s: (s.since_ms, s.assignee, s.from_version))


def holder_step(open_: dict[str, tuple[str, int]], v: Container) -> list[HolderSpan]:
    """One version of ``holder_spans``: the holdings ``v`` ends (returned) and begins (added to
    ``open_``, assignee -> (from version, since)). Lets a view extend the spans of a path by one
    version instead of walking the whole path again."""
    spans: list[HolderSpan] = []
    status = v.payload["status"]
    now = set(v.payload.get("assigned_to", ())) if status not in TASK_TERMINAL else set()
    for who in sorted(set(open_) - now):
        start, since = open_.pop(who)
        reason = v.payload.get("reason")
        ended = status if status in TASK_TERMINAL else reason if reason in HOLDER_ENDS else "removed"
        spans.append(HolderSpan(who, start, v.did, since, v.timestamp_ms, ended))
    for who in v.payload.get("assigned_to", ()):
        if who in now and who not in open_:
            open_[who] = (v.did, v.timestamp_ms)
        elif status in TASK_TERMINAL and who not in {sp.assignee for sp in spans}:
            # a holder the version (a join) lists as having finished it
            spans.append(HolderSpan(who, v.did, v.did, v.timestamp_ms, v.timestamp_ms, status))
    return spans


def path_to(head: Container, held: Held) -> list[Container]:
    """A path of versions from the lineage's first version to ``head`` (at a join: through the parent
    the shown-head rule prefers), oldest first."""
    _, first = lineage_of(head, held)
    path, v = [head], head
    while v.did != first.did and len(path) < 100_000:
        parents = [p for p in (held.get(d) for d in v.related.get("previous_version", ())) if p is not None]
        if not parents:
            break
        v = shown_head(parents, first.sender_did)
        path.append(v)
    return path[::-1]


def lineage_versions(head: Container, held: Held) -> list[Container]:
    """Every version ``head`` descends from (itself included)."""
    return list(ancestry([head], held).values())


def steward_schedule(lineage: str, version: Container, participants) -> list[tuple[str, int]]:
    """When each steward may take ``version`` over (section 8): the goal's participants except its
    assignees, ranked by SHA-256(lineage id ‖ version DID ‖ participant DID) over the UTF-8 texts
    joined; rank k at overdue_at + (k + 1) * check_grace_s / 4. Empty when nothing can be overdue."""
    st = task_state(version)
    if st.overdue_at_ms is None:
        return []
    held_by = set(st.assigned_to)
    ranked = sorted((d for d in dict.fromkeys(participants) if d not in held_by),
                    key=lambda d: hashlib.sha256((lineage + version.did + d).encode()).digest())
    return [(d, st.overdue_at_ms + (k + 1) * st.grace_ms // 4) for k, d in enumerate(ranked)]


# --- due state (section 8, "no silent loss") ---------------------------------------------------------


def due_state(*, status: str, assigned_to, due_at_ms: int | None, overdue_at_ms: int | None,
              liveness: dict[str, str], offer_open: bool, forks: int, goal_status: str | None, rule: str,
              now_ms: int) -> str | None:
    """What a task needs now, the most pressing first: goal_closed, holder_dead, overdue,
    needs_decision / offer_open / unassigned (nobody holds it), fork, due; None when nothing."""
    if status in TASK_TERMINAL:
        return None
    if goal_status in GOAL_TERMINAL:
        return "goal_closed"
    if assigned_to:
        if all(liveness.get(d) == "dead" for d in assigned_to):
            return "holder_dead"
        if overdue_at_ms is not None and now_ms >= overdue_at_ms:
            return "overdue"
    elif offer_open:
        return "offer_open"
    elif rule in ("cogconsensus", "meshconsensus"):
        return "needs_decision"  # (the participants' nominations and votes, or the committee, decide)
    else:
        return "unassigned"
    if forks:
        return "fork"
    if due_at_ms is not None and now_ms >= due_at_ms:
        return "due"
    return None
