"""What the event feed reads: the tailed tables, their high-water marks and the stream cursor (pure;
protocols/web.md 5.1, 5.2).

The feed tails the database rather than hooking into the node, because the CLI writes some tables
directly while the node runs. Each source has a high-water mark: the last row id seen, and for the
sources whose rows change in place (a held command decided, a draft accepted) also the last change
time seen. ``poll(db, marks)`` returns the events of the rows past the marks and the marks after
them, each query an indexed ``WHERE id > ?`` (or a range of the change time) with a ``LIMIT``.

The cursor a stream sends as each event's ``id:`` is every mark, compact:
``log=12,note=40,held=3:1733090000000,...``; the browser sends the last one back as
``Last-Event-ID`` and the stream resumes there. A row changed twice within one millisecond between
two polls is seen once (the change-time mark is a strict ``>``): the page reloads its list on any
event, so nothing stays stale.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable

from meshnode.store import chat
from meshnode.store.database import Database, sql_errors

LIMIT = 200          # rows per source per poll (more: the next poll continues at once)
RESUME_LIMIT = 500   # rows per source a resumed stream may have missed; more: a resync event
MAX_CURSOR = 400     # characters of a Last-Event-ID we parse
TEXT_CUT = 300       # characters of a note's text in its event
RESULT_CUT = 2048    # characters of a command's result in its event

Marks = dict[str, tuple[int, int | None]]   # source -> (last id, last change time ms or None)
Event = tuple[str, dict]                     # (SSE event type, data)


@dataclass(frozen=True)
class Source:
    """One tailed table: ``new`` rows by id, ``changed`` rows by a time column (or None)."""

    name: str
    table: str
    columns: str
    to_events: Callable[[dict], list[Event]]
    time_column: str | None = None
    rowid_filter: str | None = None   # only rows matching this (the id range still moves past the rest)


def _cut(text, n: int) -> str:
    return text[:n] if isinstance(text, str) else ""


def _json(text) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {"text": _cut(text, RESULT_CUT)}
    return value if isinstance(value, dict) else {"value": value}


def _log_events(row: dict) -> list[Event]:
    name = row["name"] or ""
    value = _json(row["value"])
    if name == "tick":
        return [("tick", {**value, "log_id": row["id"], "tick": value.get("tick"),
                          "summary": {k: v for k, v in value.items() if k != "tick"}})]
    if name.startswith("cmd:") or re.match(r"task\d+:cmd:", name):
        result = json.dumps(value, ensure_ascii=False, default=str)
        return [("command", {"id": value.get("cmd_id") or name.split(":")[-1], "log_id": row["id"],
                             "name": value.get("type") or name, "status": value.get("status") or row["status"],
                             "result": result[:RESULT_CUT]})]
    if name.startswith(("gate:", "confirm:")):
        return [("gate", {"id": row["id"], "name": name, "value": value})]
    return []


def _note_events(row: dict) -> list[Event]:
    topic = row["topic"] or ""
    note = {"id": row["id"], "did": row["container_did"], "source": row["source"], "topic": topic,
            "text": _cut(row["text"], TEXT_CUT)}
    thread = chat.thread_name(row["container_did"], topic)  # a thread's first message: named by its own DID
    if thread is None:
        return [("note", note)]
    return [("note", note), ("chat", {"thread": thread, "did": row["container_did"], "side": chat.side(row["source"]),
                                      "text": _cut(row["text"], TEXT_CUT)})]


def _held_events(row: dict) -> list[Event]:
    return [("held", {"id": row["id"], "status": row["status"], "tool": row["type"], "tick": row["tick"]})]


def _gmp_events(row: dict) -> list[Event]:
    return [(row["class"], {"id": row["did"], "did": row["did"], "by": row["sender_did"]})]


def _draft_events(row: dict) -> list[Event]:
    return [("draft", {"id": row["id"], "path": row["path"], "status": row["status"]})]


def _confirm_events(row: dict) -> list[Event]:
    return [("confirm", {"id": row["id"], "tool": row["tool"], "status": row["status"]})]


def _snapshot_events(row: dict) -> list[Event]:
    return [("snapshot", {"id": row["id"], "reason": _cut(row["reason"], TEXT_CUT)})]


def _reactor_events(row: dict) -> list[Event]:
    return [("reactor", {"id": row["id"], "about": row["dedupe_key"], "action": row["action"],
                         "rule": row["rule"], "why": _cut(row["why"], TEXT_CUT), "job": row["job_id"]})]


SOURCES: tuple[Source, ...] = (
    Source("log", "process_log", "id, name, value, status", _log_events),
    Source("note", "notes", "id, topic, text, source, container_did", _note_events),
    Source("held", "held_commands", "id, tick, type, status", _held_events, time_column="decided_ms"),
    Source("gmp", "containers", "rowid AS id, did, class, sender_did", _gmp_events,
           rowid_filter="class IN ('goal', 'task')"),
    Source("draft", "gate_drafts", "id, path, status", _draft_events, time_column="updated_ms"),
    Source("confirm", "gate_confirmations", "id, tool, status", _confirm_events, time_column="decided_ms"),
    Source("snap", "gate_snapshots", "id, reason", _snapshot_events),
    Source("reactor", "reactor_decisions", "id, dedupe_key, action, rule, why, job_id", _reactor_events),
)
BY_NAME = {s.name: s for s in SOURCES}
EVENT_TYPES = ("tick", "command", "gate", "held", "note", "chat", "goal", "task", "draft", "confirm",
               "snapshot", "reactor", "mode", "peer", "llm_token", "resync", "inbox")
INBOX_SOURCES = ("held", "draft", "confirm")  # rows that are, or decide, items of the person's inbox
ESCALATION_TOPIC = "reactor-escalation"  # an escalation's note (records.inbox.ESCALATION_TOPIC)


def inbox_event(events: list[tuple[str, str, dict]]) -> dict | None:
    """The ``inbox`` event's data when a poll's events touch the person's inbox (a confirmation asked
    or answered, a held command or a draft made or decided, an escalation's note), else None: one
    event per poll, telling the pages to count again (``/api/inbox/count``)."""
    kinds = sorted({kind for source, kind, data in events if source in INBOX_SOURCES
                    or (kind == "note" and data.get("topic") == ESCALATION_TOPIC)})
    return {"changed": kinds} if kinds else None


# --- the cursor ------------------------------------------------------------------------------------

def encode(marks: Marks) -> str:
    """``log=12,note=40,held=3:1733090000000,...`` in SOURCES order."""
    parts = []
    for s in SOURCES:
        if s.name in marks:
            last, at = marks[s.name]
            parts.append(f"{s.name}={last}" + (f":{at}" if at is not None else ""))
    return ",".join(parts)


_PART = re.compile(r"^([a-z]+)=(\d{1,19})(?::(\d{1,19}))?$")


def decode(text: str | None) -> Marks | None:
    """The marks of a cursor; None when it is absent, too long, malformed or names an unknown source
    (the stream then starts at the current marks with a ``resync``)."""
    if not text or len(text) > MAX_CURSOR:
        return None
    marks: Marks = {}
    for part in text.split(","):
        m = _PART.match(part.strip())
        if m is None or m.group(1) not in BY_NAME or m.group(1) in marks:
            return None
        timed = BY_NAME[m.group(1)].time_column is not None
        if timed != (m.group(3) is not None):
            return None
        marks[m.group(1)] = (int(m.group(2)), int(m.group(3)) if timed else None)
    return marks if set(marks) == set(BY_NAME) else None


def ahead(marks: Marks, heads: Marks) -> bool:
    """Whether a cursor names rows this database does not have (another database, or rows removed)."""
    return any(marks[n][0] > heads[n][0] or (marks[n][1] or 0) > (heads[n][1] or 0) for n in heads)


# --- reading the database (run in the store's reader thread) -------------------------------------

def _heads_sql() -> str:
    parts = []
    for s in SOURCES:
        parts.append(f"(SELECT COALESCE(MAX({'rowid' if s.rowid_filter else 'id'}), 0) FROM {s.table})")
        if s.time_column:
            parts.append(f"(SELECT COALESCE(MAX({s.time_column}), 0) FROM {s.table})")
    return "SELECT " + ", ".join(parts)


HEADS_SQL = _heads_sql()


def heads(db: Database) -> Marks:
    """The marks of the newest rows now (one statement): where a new stream starts, and how far a
    poll reads."""
    with sql_errors("reading the feed's marks"):
        values = iter(db.conn.execute(HEADS_SQL).fetchone())
    return {s.name: (int(next(values)), int(next(values)) if s.time_column else None) for s in SOURCES}


def _rows(db: Database, sql: str, params: tuple) -> list[dict]:
    cur = db.conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _poll_source(db: Database, s: Source, mark: tuple[int, int | None], upto: tuple[int, int | None],
                 limit: int) -> tuple[list[Event], tuple[int, int | None], bool]:
    """(the events, the mark after them, whether rows were left for the next poll).

    New rows come by id; rows changed in place by their time column, only among the rows seen before
    (a new row is reported once, as it is now). A row that is new but not yet read (the id query hit
    its limit) is reported when it is read, so the time mark may move past it."""
    last, at = mark
    top_id, top_at = upto
    id_col = "rowid" if s.rowid_filter else "id"
    where = f" AND {s.rowid_filter}" if s.rowid_filter else ""
    new = _rows(db, f"SELECT {s.columns} FROM {s.table} WHERE {id_col} > ? AND {id_col} <= ?{where}"
                    f" ORDER BY {id_col} LIMIT ?", (last, top_id, limit))
    more = len(new) == limit
    events = [e for r in new for e in s.to_events(r)]
    new_last = new[-1]["id"] if more else max(last, top_id)
    if s.time_column is None:
        return events, (new_last, None), more
    sql = (f"SELECT {s.columns}, {s.time_column} AS at_ms FROM {s.table} WHERE {s.time_column} > ?"
           f" AND {s.time_column} <= ? AND id <= ? ORDER BY {s.time_column}, id LIMIT ?")
    changed = _rows(db, sql, (at, top_at, last, limit))
    new_at = max(at, top_at)
    if len(changed) == limit:  # the mark is a time: it may not stop inside one millisecond's rows
        more, new_at = True, changed[-1]["at_ms"]
        if changed[0]["at_ms"] < new_at:  # the last millisecond's rows come whole with the next poll
            new_at -= 1
            changed = [r for r in changed if r["at_ms"] <= new_at]
        else:  # all in one millisecond (one decision on many rows): all of them now
            changed = _rows(db, sql, (new_at - 1, new_at, last, -1))
    events += [e for r in changed for e in s.to_events(r)]
    return events, (new_last, new_at), more


def poll(db: Database, marks: Marks, upto: Marks | None = None, limit: int = LIMIT) -> dict:
    """The events past ``marks`` (up to ``upto``, default the newest rows), in source order, and the
    marks after them: ``{"events": [(source, type, data)], "marks", "more": [sources with rows left]}``.
    A source whose newest row is not past its mark costs no query: a quiet poll is one statement."""
    with sql_errors("reading the feed"):
        upto = upto if upto is not None else heads(db)
        events, after, more = [], {}, []
        for s in SOURCES:
            (last, at), (top_id, top_at) = marks[s.name], upto[s.name]
            if top_id <= last and (s.time_column is None or top_at <= at):  # nothing new: no query
                after[s.name] = marks[s.name]
                continue
            got, after[s.name], left = _poll_source(db, s, marks[s.name], upto[s.name], limit)
            events += [(s.name, kind, data) for kind, data in got]
            if left:
                more.append(s.name)
        inbox = inbox_event(events)
        if inbox is not None:
            events.append(("inbox", "inbox", inbox))
        return {"events": events, "marks": after, "more": more}


# --- in-memory state: the cycle's mode, the connected peers ---------------------------------------

MODE_KEYS = ("mode", "idle", "paused", "llm", "last_error", "asking")


def mode_event(status: dict | None, last: dict | None) -> tuple[dict | None, dict | None]:
    """(the ``mode`` event's data or None when nothing that matters changed, the new state)."""
    if status is None:
        status = {"mode": "off"}
    key = {k: status.get(k) for k in MODE_KEYS}
    if key == last:
        return None, last
    return {**key, "ticks": status.get("ticks")}, key


def peer_events(connected: set[str], last: set[str] | None) -> list[dict]:
    """``peer`` events for the DIDs connected or gone since ``last`` (None: the first look, no events)."""
    if last is None:
        return []
    return [{"did": d, "connected": True} for d in sorted(connected - last)] + \
           [{"did": d, "connected": False} for d in sorted(last - connected)]
