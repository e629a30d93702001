"""Selective sync: which containers a node wants from its peers.

A node's *want* says which classes, which tags and how recent; conditions
combine with AND, an absent one lets everything through, and an item with no
tags fails a tags condition. A want that lets everything through travels as
nothing at all, so the usual session is unchanged by this feature. A peer
whose trust is below the node's ``min_trust`` gets the want NOTHING: it can
still fetch what it may have from us, but we take nothing from it.

Tags of a container: ``head.tags``, plus a note's hashtags and a diary entry's
topics (the fields HMP already uses as tags for those classes). Pure.

Public goals (gmp.md section 7): a GMP container is offered to a peer outside its
goal's audience only when the goal is public, and only to a want with
``public_goals`` (wire key ``"public_goals": true``; absent: false, which is also
what nodes that predate the key send). The catalog marks such items with the
pseudo-tag :data:`PUBLIC_GOAL`, longer than any real tag or wanted tag (64
characters), so no tag condition can name it, and :meth:`Want.matches` lets them
through only for a want that has the flag: both sides of a session filter their
catalogs with the same want, so their fingerprints agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from meshnode.base.container import Container

MAX_WANT_ITEMS = 64
PUBLIC_GOAL = "gmp:public-goal:" + "-" * 64  # catalog mark (store.sharing); never a real tag


class WantError(ValueError):
    """A malformed want from a peer or from the configuration."""


def tags_of(c: Container) -> list[str]:
    tags = list(c.head.get("tags", []))
    payload = c.payload if type(c.payload) is dict else {}
    if c.cls == "note":
        tags += payload.get("hashtags", [])
    elif c.cls == "diary_entry":
        tags += payload.get("topics", [])
    return sorted({t for t in tags if type(t) is str})


@dataclass(frozen=True)
class Want:
    classes: frozenset[str] | None = None  # None: every class
    tags: frozenset[str] | None = None  # None: tagged or not; otherwise one of these tags
    since_ms: int | None = None  # None: any age; otherwise head.timestamp >= since_ms
    public_goals: bool = False  # also public goals this node is not in the audience of

    @property
    def everything(self) -> bool:
        return self.classes is None and self.tags is None and self.since_ms is None and not self.public_goals

    def matches(self, cls: str, timestamp_ms: int, tags: Iterable[str]) -> bool:
        tags = tags if isinstance(tags, (set, frozenset)) else frozenset(tags)
        if PUBLIC_GOAL in tags and not self.public_goals:
            return False
        if self.classes is not None and cls not in self.classes:
            return False
        if self.since_ms is not None and timestamp_ms < self.since_ms:
            return False
        return self.tags is None or not self.tags.isdisjoint(tags)

    def select(self, entries: list) -> list:
        """The entries (with ``cls``, ``timestamp_ms``, ``tags``) this want lets through; for a want of
        everything only the public-goal mark is looked at (what :meth:`matches` would decide)."""
        if self.everything:
            return [e for e in entries if PUBLIC_GOAL not in e.tags]
        return [e for e in entries if self.matches(e.cls, e.timestamp_ms, e.tags)]

    def idents(self, entries: list) -> list[bytes]:
        """The ``ident`` of each entry :meth:`select` lets through, in one pass."""
        if self.everything:
            return [e.ident for e in entries if PUBLIC_GOAL not in e.tags]
        return [e.ident for e in entries if self.matches(e.cls, e.timestamp_ms, e.tags)]

    def to_wire(self) -> dict[str, Any] | None:
        if self.everything:
            return None
        out: dict[str, Any] = {}
        if self.classes is not None:
            out["classes"] = sorted(self.classes)
        if self.tags is not None:
            out["tags"] = sorted(self.tags)
        if self.since_ms is not None:
            out["since"] = self.since_ms
        if self.public_goals:
            out["public_goals"] = True
        return out

    @classmethod
    def from_wire(cls, data: Any) -> "Want":
        if data is None:
            return EVERYTHING
        if type(data) is not dict or not set(data) <= {"classes", "tags", "since", "public_goals"}:
            raise WantError("a want is a map with classes, tags, since and public_goals, all optional")
        since = data.get("since")
        if since is not None and (type(since) is not int or not 0 <= since < 2**63):
            raise WantError("want.since is a time in milliseconds")
        public_goals = data.get("public_goals", False)
        if type(public_goals) is not bool:
            raise WantError("want.public_goals is true or false")
        return cls(_names(data, "classes"), _names(data, "tags"), since, public_goals)

    @classmethod
    def from_settings(cls, classes: list[str], tags: list[str], window_days: float, now_ms: int,
                      public_goals: bool = False) -> "Want":
        """From the [sync] settings: empty lists and a zero window mean no condition."""
        since = int(now_ms - window_days * 86_400_000) if window_days > 0 else None
        return cls(_names({"classes": classes}, "classes") if classes else None,
                   _names({"tags": tags}, "tags") if tags else None, since, bool(public_goals))


def _names(data: dict, key: str) -> frozenset[str] | None:
    if key not in data:
        return None
    items = data[key]
    if type(items) is not list or len(items) > MAX_WANT_ITEMS or any(
            type(x) is not str or not 0 < len(x) <= 64 for x in items):
        raise WantError(f"want.{key} is a list of at most {MAX_WANT_ITEMS} short names")
    return frozenset(items)


EVERYTHING = Want()
NOTHING = Want(classes=frozenset())
