"""The notes adapters (design 3.2, 3.4, 4.2): notes addressed to a local agent, and threads
left unanswered, read from the ``notes`` view with their noise facts computed in SQL.

**Addressed** (contract override): ``notes.agent_did`` is the note's AUTHOR. A note is inbound
when another node wrote it, or it is the person's own (``source`` cli/user) and unread. It is
addressed to agent A when its container names this node's DID as a recipient (A = this node),
when one of its ``mentions`` resolves to a local agent, or when it is the person's own (A = this
node, unless it mentions another local agent). Own notes of the node (llm, llm:task, system) are
never read here. Reads go through two indexes of migration 0018: unread notes by time and one
author's notes by time; every query has a LIMIT.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from meshnode.container import ContainerError, format_ms, parse_ms
from meshnode.reactor.noise import NoteFacts, classify, normalized_text
from meshnode.reactor.types import Event, Severity, TraceKind

if TYPE_CHECKING:
    from meshnode.reactor.aliases import AliasRegistry
    from meshnode.reactor.settings import ReactorConfig
    from meshnode.store.database import Database

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MAX_NOTES = 2000                 # unread notes read per scan (newest first)
MAX_THREAD_NOTES = 2000          # notes looked at for unanswered threads per scan
ESCALATION_TOPIC = "reactor-escalation"
PERSON_SOURCES = ("cli", "user")
_DEDUPE_LINE = re.compile(r"^dedupe:\s*(esc:\S{1,400})\s*$", re.MULTILINE)
_T = "strftime('%Y-%m-%dT%H:%M:%fZ', {}, '{}')"  # notes.timestamp is format_ms text: this shifts it in SQL

M, A, B = TraceKind.MESSAGE, TraceKind.ACK, TraceKind.BLOCKER

# One row per candidate note: the note, whether it names this node as a recipient, whether it
# links a note this node wrote (a reply), and the noise facts (repeat, flood) from the author index.
_COLUMNS = (
    "n.id, n.container_did, n.agent_did, n.source, n.topic, n.text, n.mentions, n.hashtags, n.tags,"
    " n.priority, n.timestamp, n.read,"
    " EXISTS (SELECT 1 FROM container_recipients r WHERE r.recipient = :me AND r.did = n.container_did) AS to_me,"
    " EXISTS (SELECT 1 FROM container_links l JOIN containers c ON c.did = l.target_did WHERE"
    "   l.source_did = n.container_did AND l.relation != 'previous_version' AND c.sender_did = :me) AS reply")
_NOISE_COLUMNS = (
    " EXISTS (SELECT 1 FROM notes m WHERE m.agent_did = n.agent_did AND m.timestamp >= "
    + _T.format("n.timestamp", "-1 day") + " AND m.timestamp < n.timestamp AND m.id != n.id"
    "   AND reactor_norm(m.text) = reactor_norm(n.text)) AS repeated,"
    " (SELECT count(*) FROM notes m WHERE m.agent_did = n.agent_did AND m.timestamp > "
    + _T.format("n.timestamp", "-1 hour") + " AND m.timestamp <= n.timestamp) AS hour_count")

# inbound and possibly addressed: another node's note naming a recipient or a mention, or the person's
_ADDRESSED = ("((n.agent_did IS NOT :me AND (n.mentions NOT IN ('', '[]') OR EXISTS (SELECT 1 FROM"
              " container_recipients r WHERE r.recipient = :me AND r.did = n.container_did)))"
              " OR (coalesce(n.agent_did, :me) = :me AND n.source IN ('cli', 'user') AND n.llm_id IS NULL))")


def _with_norm(db: Database) -> None:
    """The repeat filter's normalized text (noise.normalized_text) as an SQL function."""
    db.conn.create_function("reactor_norm", 1, lambda t: normalized_text(t) if isinstance(t, str) else t,
                            deterministic=True)


def _json_list(text) -> list:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _ms(ts: str | None, default: int) -> int:
    try:
        return parse_ms(ts, "timestamp") if ts else default
    except ContainerError:
        return default


def addressees(row: dict, *, self_did: str, local: frozenset[str], aliases: AliasRegistry | None) -> list[str]:
    """The raw addressees of one note among this node's agents (contract 5), this node first.
    With an alias registry, a mention resolving to a non-local id is not an addressee and one
    resolving to nothing is kept raw (the core records it as unknown); without one, only mentions
    naming a local agent (or this node) count."""
    person = row["agent_did"] in (None, self_did) and row["source"] in PERSON_SOURCES
    out: list[str] = [self_did] if row["to_me"] else []
    mentioned = []
    for name in _json_list(row["mentions"]):
        if aliases is not None:
            cid = aliases.resolve(name)
            if cid is None:
                mentioned.append(name)
            elif cid in local or cid in ("self", self_did):
                mentioned.append(self_did if cid == "self" else cid)
        elif name in local or name in ("self", self_did):
            mentioned.append(self_did if name == "self" else name)
    out += [m for m in mentioned if m not in out]
    if person and not out:
        out = [self_did]
    return out


def note_type(row: dict) -> tuple[str, str | None]:
    """(event type, escalation key) in the order escalation, question, reply, direct (design 3.2)."""
    if row["topic"] == ESCALATION_TOPIC:
        m = _DEDUPE_LINE.search(row["text"] or "")
        if m:
            return "note.escalation", m.group(1)
    tags = {t.casefold() for t in _json_list(row["tags"]) + _json_list(row["hashtags"])}
    if "question" in tags or (row["text"] or "").rstrip().endswith("?"):
        return "note.question", None
    if row["reply"]:
        return "note.reply", None
    return "note.direct", None


_TYPES = {
    "note.escalation": (Severity.P2, (M, TraceKind.TASK_UPDATE, B)),
    "note.question": (Severity.P2, (M, B)),
    "note.reply": (Severity.P3, (M, A, B)),
    "note.direct": (Severity.P2, (M, A, B)),
}


def summary_of(row: dict, self_did: str, limit: int = 200) -> str:
    person = row["source"] in PERSON_SOURCES and row["agent_did"] in (None, self_did)
    who = "the person" if person else (row["agent_did"] or "?")
    first = " ".join((row["text"] or "").split())
    text = f"{who[:60]}: {first}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def note_events(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
                aliases: AliasRegistry | None = None) -> list[Event]:
    """note.* events (and note.flood) for the unread notes addressed to a local agent, each
    carrying the noise filter's verdict (design 4.2)."""
    since = format_ms(max(0, now_ms - int((cfg.max_note_age_days + 1) * DAY_MS)))  # a day past archive: logged once
    _with_norm(db)
    cur = db.conn.execute(
        f"SELECT {_COLUMNS}, {_NOISE_COLUMNS} FROM notes n INDEXED BY reactor_notes_unread WHERE n.read = 0 AND n.hidden = 0"
        f" AND n.timestamp >= :since AND {_ADDRESSED} ORDER BY n.timestamp DESC LIMIT :limit",
        {"me": self_did, "since": since, "limit": MAX_NOTES})
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    local = frozenset(cfg.local_agents) | {self_did}
    out: list[Event] = []
    floods: dict[tuple[str, str, int], list[Event]] = {}
    for row in reversed(rows):  # oldest first: the first notes of a flood are the ones kept
        etype, esc_key = note_type(row)
        at_ms = _ms(row["timestamp"], now_ms)
        author = row["agent_did"] or self_did
        facts = NoteFacts(
            note_id=row["container_did"] or str(row["id"]), author=author,
            own=row["agent_did"] == self_did and row["source"] not in PERSON_SOURCES,
            source=row["source"] or "", tags=tuple(_json_list(row["tags"]) + _json_list(row["hashtags"])),
            topic=row["topic"] or "", text=row["text"] or "", at_ms=at_ms, is_escalation=esc_key is not None,
            same_text_recent=bool(row["repeated"]), author_hour_count=int(row["hour_count"]))
        noise = classify(facts, cfg, now_ms)
        severity, kinds = _TYPES[etype]
        if etype == "note.direct" and (row["priority"] or 0) >= 2:
            severity = Severity.P1
        did = row["container_did"] or f"local-{row['id']}"
        thread = row["topic"] or author
        for n, agent in enumerate(addressees(row, self_did=self_did, local=local, aliases=aliases)):
            key = esc_key or f"note:{did}"
            if n:
                key += f":{agent}"
            e = Event(event_type=etype, subject=did, agent=agent, severity=severity, dedupe_key=key,
                      suggested_route="agent", required_trace=kinds, at_ms=at_ms, source="notes",
                      summary=summary_of(row, self_did), noise=noise,
                      refs={"note_id": row["id"], "container": did, "author": author, "thread": thread,
                            **({"topic": row["topic"]} if row["topic"] else {})})
            out.append(e)
            if noise == "flood":
                floods.setdefault((author, agent, at_ms // HOUR_MS), []).append(e)
    for (author, agent, hour), events in floods.items():
        out.append(Event(event_type="note.flood", subject=author, agent=agent, severity=Severity.P3,
                         dedupe_key=f"flood:{author}:{agent}:{hour}", suggested_route="agent",
                         required_trace=(M, B), at_ms=events[0].at_ms, source="notes",
                         summary=f"{len(events)}+ more notes from {author[:60]} within the hour (flood)",
                         refs={"author": author, "count": len(events), "first": events[0].subject}))
    return out


def unanswered_events(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
                      aliases: AliasRegistry | None = None) -> list[Event]:
    """thread.unanswered (design 3.4): per (agent, thread), the newest inbound note addressed to
    the agent, read or not, older than ``unanswered_hours``, with no note by this node in that
    thread after it. Looks at the notes of the window [max_note_age_days, unanswered_hours] ago."""
    until = now_ms - int(cfg.unanswered_hours * HOUR_MS)
    since = now_ms - int(cfg.max_note_age_days * DAY_MS)
    if until <= since or until <= 0:
        return []
    cur = db.conn.execute(  # only the notes that may be addressed, each part a range scan on its own index
        f"SELECT {_COLUMNS} FROM notes n WHERE n.id IN (SELECT m.id FROM container_recipients r CROSS JOIN notes m"
        " ON m.container_did = r.did WHERE r.recipient = :me AND m.timestamp >= :since AND m.timestamp < :until"
        " UNION SELECT id FROM notes INDEXED BY reactor_notes_mentions WHERE mentions NOT IN ('', '[]') AND"
        " timestamp >= :since AND timestamp < :until UNION SELECT id FROM notes INDEXED BY reactor_notes_person"
        " WHERE source IN ('cli', 'user') AND timestamp >= :since AND timestamp < :until)"
        f" AND n.hidden = 0 AND {_ADDRESSED} ORDER BY n.timestamp DESC LIMIT :limit",
        {"me": self_did, "since": format_ms(max(0, since)), "until": format_ms(until), "limit": MAX_THREAD_NOTES})
    names = [d[0] for d in cur.description]
    newest: dict[tuple[str, str], dict] = {}
    local = frozenset(cfg.local_agents) | {self_did}
    for row in cur.fetchall():  # newest first: the first row of a thread is its newest
        row = dict(zip(names, row))
        if row["topic"] == ESCALATION_TOPIC:
            continue  # an escalation's own follow-up is its check, not a thread to answer
        thread = row["topic"] or (row["agent_did"] or self_did)
        for agent in addressees(row, self_did=self_did, local=local, aliases=aliases):
            newest.setdefault((agent, thread), row)
    out = []
    for (agent, thread), row in newest.items():
        if _answered(db, row, self_did=self_did):
            continue
        did = row["container_did"] or f"local-{row['id']}"
        out.append(Event(event_type="thread.unanswered", subject=thread, agent=agent, severity=Severity.P3,
                         dedupe_key=f"unanswered:{agent}:{thread}:{did}", suggested_route="agent",
                         required_trace=(M, B), at_ms=_ms(row["timestamp"], now_ms), source="threads",
                         summary=summary_of(row, self_did),
                         refs={"note_id": row["id"], "container": did, "thread": thread,
                               "author": row["agent_did"] or self_did, **({"topic": row["topic"]} if row["topic"] else {})}))
    return out


def _answered(db: Database, row: dict, *, self_did: str) -> bool:
    """Whether this node wrote in the note's thread after it: the same topic, or (no topic) a note
    to the author (a recipient) or, for the person's own note, any agent note after it."""
    q = db.conn.execute
    ts = row["timestamp"]
    if row["topic"]:
        return q("SELECT 1 FROM notes m INDEXED BY reactor_notes_by_topic WHERE m.topic = ? AND m.timestamp > ? AND"
                 " m.agent_did = ? AND m.source IN ('llm', 'llm:task', 'system') LIMIT 1",
                 (row["topic"], ts, self_did)).fetchone() is not None
    if row["agent_did"] in (None, self_did):
        return q("SELECT 1 FROM notes m WHERE m.agent_did = ? AND m.timestamp > ? AND m.topic IS NULL AND m.source"
                 " IN ('llm', 'llm:task') LIMIT 1", (self_did, ts)).fetchone() is not None
    return q("SELECT 1 FROM container_recipients r CROSS JOIN notes m ON m.container_did = r.did WHERE r.recipient = ?"
             " AND m.agent_did = ? AND m.timestamp > ? LIMIT 1",  # CROSS: the author's mail first, not all of ours
             (row["agent_did"], self_did, ts)).fetchone() is not None

