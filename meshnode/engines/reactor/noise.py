"""The noise filter: which inbound notes never become events (design 4.2). Pure.

The notes adapter (reactor-store) computes the facts of one note with SQL (its author, whether the
same text was seen from that author within 24 h, how many notes the author sent this agent in the
last hour) and asks ``classify``; a non-empty answer is the filter's name, stored on the event
(``Event.noise``) so the core logs a ``noise`` decision naming it. Filters apply in a fixed order
and the first match wins.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

FILTERS = ("own", "ignore_tags", "ignore_subjects", "synthetic", "archive", "repeat", "flood")
_DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class NoteFacts:
    note_id: str
    author: str
    own: bool  # authored by this node (or one of its agents)
    source: str  # notes.source: llm | llm:task | cli | user | system | ...
    tags: tuple[str, ...]
    topic: str
    text: str
    at_ms: int
    is_escalation: bool  # an escalation note from another reactor (tags reactor+escalation, a dedupe line)
    same_text_recent: bool  # (author, normalized text) seen within 24 h
    author_hour_count: int  # notes from this author to this agent in the last hour, this one included


@functools.lru_cache(maxsize=64)
def _patterns(subjects: tuple[str, ...]) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in subjects)


def classify(facts: NoteFacts, cfg, now_ms: int) -> str:
    """"" when the note may become an event, else the name of the first filter that drops it."""
    tags = {t.casefold() for t in facts.tags}
    if facts.own or ("reactor" in tags and not facts.is_escalation):
        return "own"
    ignore = {t.casefold() for t in cfg.ignore_tags}
    if tags & ignore:
        return "ignore_tags"
    first_line = facts.text.split("\n", 1)[0]
    for pat in _patterns(tuple(cfg.ignore_subjects)):
        if (facts.topic and pat.search(facts.topic)) or pat.search(first_line):
            return "ignore_subjects"
    if facts.source == "system" and not facts.is_escalation:
        return "synthetic"
    if now_ms - facts.at_ms > cfg.max_note_age_days * _DAY_MS:
        return "archive"
    if facts.same_text_recent:
        return "repeat"
    if facts.author_hour_count > cfg.flood_per_author_hour:
        return "flood"
    return ""


def normalized_text(text: str) -> str:
    """The text the ``repeat`` filter hashes: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split())
