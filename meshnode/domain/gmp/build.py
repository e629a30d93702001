"""Builders of GMP containers: goal, task and workflow_entry, all at class_version 1.1.

Each builder lays out ``related`` the way gmp.md section 2 wants it and signs through
``build_container``, which checks the class schema (so a builder never signs what a peer
would refuse at step 7). Times may be given as integer milliseconds: they are formatted
as container time text.
"""

from __future__ import annotations

from typing import Iterable

from meshnode.base.container import Container, build_container, format_ms
from meshnode.base.identity.keys import NodeKey

VERSION = "1.1"
TIME_FIELDS = ("deadline", "next_check_at", "expires_at", "received_at")


def _times(fields: dict) -> dict:
    """``fields`` with integer times (ms) in the time fields turned into container time text."""
    return {k: (format_ms(v) if k in TIME_FIELDS and type(v) is int else v) for k, v in fields.items()}


def _related(**links: Iterable[str] | None) -> dict[str, list[str]] | None:
    related = {name: list(dids) for name, dids in links.items() if dids}
    return related or None


def _sign(key: NodeKey, cls: str, payload: dict, now_ms: int, related, tags=(), recipients=()) -> Container:
    return build_container(key, cls, payload, class_version=VERSION, timestamp_ms=now_ms, related=related,
                           tags=list(tags) or None,
                           head_extra={"recipient": list(recipients)} if recipients else None)


def goal(key: NodeKey, payload: dict, *, now_ms: int, tags=(), parent_goal: str | None = None, depends_on=(),
         see_also=(), previous=()) -> Container:
    """A goal version; ``parent_goal`` (a goal lineage id) makes it a subgoal."""
    related = _related(in_reply_to=[parent_goal] if parent_goal else None, depends_on=depends_on,
                       see_also=see_also, previous_version=previous)
    return _sign(key, "goal", payload, now_ms, related, tags)


def task(key: NodeKey, payload: dict, *, now_ms: int, goal: str, parent_task: str | None = None, depends_on=(),
         previous=(), agreed=(), see_also=(), tags=(), recipients=()) -> Container:
    """A task version under the goal lineage ``goal`` (and the parent task lineage ``parent_task``)."""
    related = _related(in_reply_to=[goal] + ([parent_task] if parent_task else []), depends_on=depends_on,
                       previous_version=previous, agreed=agreed, see_also=see_also)
    return _sign(key, "task", _times(payload), now_ms, related, tags, recipients)


def entry(key: NodeKey, entry_type: str, fields: dict, *, now_ms: int, about: str, summary: str | None = None,
          contradicts=(), recipients=(), see_also=()) -> Container:
    """A workflow entry about the task (or goal) lineage ``about``; ``fields`` are the kind's own fields.

    ``see_also`` is for a nomination by a participant: the goal version listing the signer.
    """
    payload = {"entry_type": entry_type, **_times(fields)}
    if summary is not None:
        payload["summary"] = summary
    related = _related(in_reply_to=[about], contradicts=contradicts, see_also=see_also)
    return _sign(key, "workflow_entry", payload, now_ms, related, (), recipients)


def _changed(payload: dict, changes: dict) -> dict:
    """``payload`` with ``changes`` over it; a change to None removes the field."""
    out = dict(payload, **changes)
    return {k: v for k, v in out.items() if v is not None}


def next_task(key: NodeKey, parents: list[Container], *, now_ms: int, changes: dict, agreed=(), see_also=(),
              depends_on=None, recipients=()) -> Container:
    """The next version of a task after ``parents`` (one, or the heads it joins): the payload, tags,
    goal, parent task and dependencies of ``parents[0]`` with ``changes`` applied (None removes a field)."""
    base = parents[0]
    irt = base.related["in_reply_to"]
    return task(key, _changed(base.payload, changes), now_ms=now_ms, goal=irt[0],
                parent_task=irt[1] if len(irt) > 1 else None,
                depends_on=base.related.get("depends_on", ()) if depends_on is None else depends_on,
                previous=[p.did for p in parents], agreed=agreed, see_also=see_also,
                tags=base.head.get("tags", ()), recipients=recipients)


def next_goal(key: NodeKey, parents: list[Container], *, now_ms: int, changes: dict) -> Container:
    """The next version of a goal after ``parents``, keeping its tags and links, with ``changes`` applied."""
    base = parents[0]
    rel = base.related
    return goal(key, _changed(base.payload, changes), now_ms=now_ms, tags=base.head.get("tags", ()),
                parent_goal=(rel.get("in_reply_to") or [None])[0], depends_on=rel.get("depends_on", ()),
                see_also=rel.get("see_also", ()), previous=[p.did for p in parents])
