"""The notes adapters (design 3.2, 3.4, 4.2): notes addressed to a local agent, and threads
left unanswered, read from the ``notes`` view with their noise facts computed in SQL.

**Addressed** (contract override): ``notes.agent_did`` is the note's AUTHOR. A note is inbound
when another node wrote it, or it is the person's own (``source`` cli/user) and unread. It is
addressed to agent A when its container names this node's DID as a recipient (A = this node),
when one of its ``mentions`` resolves to a local agent, or when it is the person's own (A = this
node, unless it mentions another local agent). Own notes of the node (llm, llm:task, system) are
never read here. Reads go through two indexes of migration 0018: unread notes by time and one
author's notes by time; every query has a LIMIT.

**Backlog**: a scan reads only the unread notes the reactor has no event row for yet (NOT EXISTS on
``reactor_events.dedupe_key``, unique-indexed), oldest first, at most ``MAX_NOTES``: a big unread
backlog drains over several scans, and a note already known costs one index probe, never an event
again. That row, not the core's dedupe window, is what keeps an old unread note from coming back
as new: it lives ``retention_days`` after its last sighting, and the read window is at most
``retention_days`` (``read_window_ms``), so a note whose row was pruned is too old to be read.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import TYPE_CHECKING

from meshnode.base.container import ContainerError, format_ms, parse_ms
from meshnode.records.gmp.reads import rows as row_dicts
from meshnode.store import speakers
from meshnode.engines.reactor.noise import NoteFacts, classify, normalized_text
from meshnode.engines.reactor.types import Event, Severity, TraceKind

if TYPE_CHECKING:
    from meshnode.engines.reactor.aliases import AliasRegistry
    from meshnode.base.config.reactor import ReactorConfig
    from meshnode.store.database import Database

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
MAX_NOTES = 2000                 # unread notes not yet known to the reactor read per scan (oldest first)
MAX_THREAD_NOTES = 2000          # notes looked at for unanswered threads per scan
ESCALATION_TOPIC = "reactor-escalation"
PERSON_SOURCES = ("cli", "user")
_DEDUPE_LINE = re.compile(r"^dedupe:\s*(esc:\S{1,400})\s*$", re.MULTILINE)
MAX_AUTHOR_NOTES = 20_000       # one author's notes looked at for the repeat and flood facts per scan

M, A, B = TraceKind.MESSAGE, TraceKind.ACK, TraceKind.BLOCKER

# One row per candidate note: the note, whether it names this node as a recipient, whether it
# links a note this node wrote (a reply). The noise facts (repeat, flood) come from noise_facts.
_TO_ME = "EXISTS (SELECT 1 FROM container_recipients r WHERE r.recipient = :me AND r.did = n.container_did)"
_COLUMNS = (
    "n.id, n.container_did, n.agent_did, n.source, n.topic, n.text, n.mentions, n.hashtags, n.tags,"
    " n.priority, n.timestamp, n.read, " + _TO_ME + " AS to_me,"
    " EXISTS (SELECT 1 FROM container_links l JOIN containers c ON c.did = l.target_did WHERE"
    "   l.source_did = n.container_did AND l.relation != 'previous_version' AND c.sender_did = :me) AS reply,"
    # who asked for it (store.speakers: the provenance row, a primary-key probe each) and the peer's name
    + ", ".join(f"(SELECT pr.{c} FROM provenance pr WHERE pr.container_did = n.container_did) AS asked_{c}"
                for c in ("kind", "via", "actor_id", "label"))
    + ", (SELECT ap.name FROM agent_peers ap WHERE ap.id = n.agent_did) AS peer_name")

# inbound and possibly addressed: another node's note naming a recipient or a mention, or the person's
_ADDRESSED = ("((n.agent_did IS NOT :me AND (n.mentions NOT IN ('', '[]') OR EXISTS (SELECT 1 FROM"
              " container_recipients r WHERE r.recipient = :me AND r.did = n.container_did)))"
              " OR (coalesce(n.agent_did, :me) = :me AND n.source IN ('cli', 'user') AND n.llm_id IS NULL))")


# the dedupe key of a note's first event (note_events): known notes are skipped by this probe
_KNOWN = ("EXISTS (SELECT 1 FROM reactor_events e WHERE e.dedupe_key = CASE WHEN n.topic = '" + ESCALATION_TOPIC
          + "' THEN reactor_note_key(n.text, n.container_did, n.id) ELSE 'note:' || coalesce(n.container_did,"
          " 'local-' || n.id) END)")


def _note_key(text, did, note_id) -> str:
    """An escalation-topic note's first dedupe key, as note_events gives it (note_type)."""
    m = _DEDUPE_LINE.search(text) if isinstance(text, str) else None
    return m.group(1) if m else f"note:{did or f'local-{note_id}'}"


def _with_functions(db: Database) -> None:
    """An escalation note's dedupe key as an SQL function."""
    db.conn.create_function("reactor_note_key", 3, _note_key, deterministic=True)


def actor_of(row: dict, self_did: str) -> str | None:
    """Who a note is from, for the repeat and flood facts: a peer's note its author's DID; a note
    this node wrote for someone the one who asked (store.provenance): ``person``, ``a2a:<key id>``,
    ``peer:<DID>``; the node's and the agent's own (and rows of before) this node's DID. None: the
    person's own without an author DID (no facts). Parties never share a counter (issue 33)."""
    author = row["agent_did"]
    if author is None or author != self_did:
        return author
    kind = row.get("asked_kind")
    if kind == "person":
        return "person"
    if kind in ("a2a", "peer") and row.get("asked_actor_id"):
        return f"{kind}:{row['asked_actor_id']}"
    return self_did


_BY_ACTOR = ("SELECT n.id, n.timestamp, n.text FROM notes n INDEXED BY reactor_notes_by_author LEFT JOIN provenance p"
             " ON p.container_did = n.container_did WHERE n.agent_did = ? AND n.timestamp >= ? AND n.timestamp <= ?"
             " AND coalesce(p.kind, '') = ? AND coalesce(p.actor_id, '') = ? ORDER BY n.timestamp LIMIT ?")
_BY_AUTHOR = ("SELECT id, timestamp, text FROM notes INDEXED BY reactor_notes_by_author WHERE agent_did = ? AND"
              " timestamp >= ? AND timestamp <= ? ORDER BY timestamp LIMIT ?")


def noise_facts(db: Database, rows: list[dict], now_ms: int, self_did: str = "") -> dict[int, tuple[bool, int]]:
    """note id -> (same text from its actor within 24 h before it, the actor's notes in the hour
    up to it) for this scan's rows; the actor is ``actor_of`` (a peer by its DID; the person, each
    A2A party and each peer a note was written for, each on its own). One range read per actor on
    the author index (the 24 h before the actor's first row up to its last, at most
    MAX_AUTHOR_NOTES), each text normalized once: O(actor's notes in the window) per scan, never a
    subquery per note (that grew with the square of an author's notes per day)."""
    by_actor: dict[str, list[dict]] = {}
    for row in rows:
        actor = actor_of(row, self_did)
        if actor is not None:  # the person's own with no author DID: no repeat or flood facts
            by_actor.setdefault(actor, []).append(row)
    out: dict[int, tuple[bool, int]] = {}
    for actor, mine in by_actor.items():
        first = min(_ms(r["timestamp"], now_ms) for r in mine)
        last = max(r["timestamp"] for r in mine)
        window = (format_ms(max(0, first - DAY_MS)), last, MAX_AUTHOR_NOTES)
        if actor == "person":
            read = db.conn.execute(_BY_ACTOR, (self_did, window[0], last, "person", "", MAX_AUTHOR_NOTES))
        elif actor.startswith(("a2a:", "peer:")) and mine[0]["agent_did"] == self_did:
            kind, _sep, actor_id = actor.partition(":")
            read = db.conn.execute(_BY_ACTOR, (self_did, window[0], last, kind, actor_id, MAX_AUTHOR_NOTES))
        else:
            read = db.conn.execute(_BY_AUTHOR, (actor, *window))
        times: list[int] = []
        texts: dict[str, list[tuple[int, int]]] = {}  # normalized text -> [(ms, note id)] by time
        for nid, ts, text in read:
            ms = _ms(ts, now_ms)
            times.append(ms)
            texts.setdefault(normalized_text(text or ""), []).append((ms, nid))
        for r in mine:
            ms = _ms(r["timestamp"], now_ms)
            same = texts.get(normalized_text(r["text"] or ""), ())
            lo = bisect.bisect_left(same, (ms - DAY_MS, -1))  # the first of that text within the 24 h before
            repeated = lo < len(same) and same[lo][0] < ms
            hour = bisect.bisect_right(times, ms) - bisect.bisect_right(times, ms - HOUR_MS)
            out[r["id"]] = (repeated, hour)
    return out


def read_window_ms(cfg: ReactorConfig) -> int:
    """How far back unread notes are read: a day past the archive filter (the backlog at first
    start is logged once as noise), but never beyond ``retention_days``, so a note is never read
    again after its event row was pruned (it would be new again)."""
    return int(min(cfg.max_note_age_days + 1, cfg.retention_days) * DAY_MS)


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


MAX_ESCALATION_KEYS = 100       # dedupe lines read from one (batched) escalation note


def escalation_keys(text: str | None) -> list[str]:
    """Every ``dedupe: esc:...`` line of an escalation note, in order, without repeats: a note
    batching several escalations to one recipient (one per recipient and level per scan) carries
    one line per escalation, and each becomes its own event (so each key stays idempotent)."""
    out: list[str] = []
    for m in _DEDUPE_LINE.finditer(text or ""):
        if m.group(1) not in out:
            out.append(m.group(1))
            if len(out) >= MAX_ESCALATION_KEYS:
                break
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


def speaker_of(row: dict, self_did: str) -> speakers.Speaker:
    """Who wrote the note of ``row``, by its provenance row (never its text nor signed source)."""
    return speakers.of(self_did, row.get("asked_kind"), row.get("asked_via"), row.get("asked_actor_id"),
                       row.get("asked_label"), row["agent_did"], row.get("peer_name"))


def summary_of(row: dict, self_did: str, limit: int = 200) -> str:
    """"<who>: <the text on one line>", who by ``speaker_of`` ("the person (web)", "A2A party "bob"
    (known, key known:bob)", "peer ...", "this node"): a text cannot name its own sender."""
    who = speaker_of(row, self_did).words()
    first = " ".join((row["text"] or "").split())
    text = f"{who}: {first}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def note_events(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
                aliases: AliasRegistry | None = None, chat_grace_ms: int = 0) -> list[Event]:
    """note.* events (and note.flood) for the unread notes addressed to a local agent and not yet
    known to the reactor (oldest first, at most MAX_NOTES), each carrying the noise filter's
    verdict (design 4.2). A chat message to this node alone younger than ``chat_grace_ms`` is
    left for a later scan: the tick it caused answers it (and marks it read) or it is read then
    (design 6.3: a chat message makes a tick, not a tick and a wake)."""
    since = format_ms(max(0, now_ms - read_window_ms(cfg)))
    local = frozenset(cfg.local_agents) | {self_did}
    _with_functions(db)

    def addressed(mentions, author, source, to_me) -> bool:  # a mention of a peer only is no event: skip it in SQL
        row = {"mentions": mentions, "agent_did": author, "source": source, "to_me": to_me}
        return bool(addressees(row, self_did=self_did, local=local, aliases=aliases))

    db.conn.create_function("reactor_addressed", 4, addressed)
    rows = row_dicts(db.conn.execute(
        f"SELECT {_COLUMNS} FROM notes n INDEXED BY reactor_notes_unread WHERE n.read = 0 AND n.hidden = 0"
        f" AND n.timestamp >= :since AND {_ADDRESSED} AND NOT {_KNOWN} AND reactor_addressed(n.mentions, n.agent_did,"
        f" n.source, {_TO_ME}) ORDER BY n.timestamp LIMIT :limit",
        {"me": self_did, "since": since, "limit": MAX_NOTES}))
    facts_of = noise_facts(db, rows, now_ms, self_did)
    out: list[Event] = []
    floods: dict[tuple[str, str, int], list[Event]] = {}
    for row in rows:  # oldest first: the first notes of a flood are the ones kept
        if chat_grace_ms and _young_chat(row, now_ms - chat_grace_ms, self_did, local, aliases):
            continue
        etype, esc_key = note_type(row)
        repeated, hour_count = facts_of.get(row["id"], (False, 0))
        at_ms = _ms(row["timestamp"], now_ms)
        author = row["agent_did"] or self_did
        actor = actor_of(row, self_did) or author  # whose counter: the flood event names it
        facts = NoteFacts(
            note_id=row["container_did"] or str(row["id"]), author=actor,
            own=row["agent_did"] == self_did and row["source"] not in PERSON_SOURCES,
            source=row["source"] or "", tags=tuple(_json_list(row["tags"]) + _json_list(row["hashtags"])),
            topic=row["topic"] or "", text=row["text"] or "", at_ms=at_ms, is_escalation=esc_key is not None,
            same_text_recent=repeated, author_hour_count=hour_count)
        noise = classify(facts, cfg, now_ms)
        severity, kinds = _TYPES[etype]
        if etype == "note.direct" and (row["priority"] or 0) >= 2:
            severity = Severity.P1
        did = _did(row)
        thread = row["topic"] or author
        speaker = speaker_of(row, self_did)
        # a batched escalation note (one per recipient and level, reactor-node) names several keys: one event each
        keys = escalation_keys(row["text"]) if esc_key else [f"note:{did}"]
        targets = addressees(row, self_did=self_did, local=local, aliases=aliases)
        for n, agent, key in ((n, a, k) for n, a in enumerate(targets) for k in keys):
            if n:
                key += f":{agent}"
            e = Event(event_type=etype, subject=did, agent=agent, severity=severity, dedupe_key=key,
                      suggested_route="agent", required_trace=kinds, at_ms=at_ms, source="notes",
                      summary=summary_of(row, self_did), noise=noise,
                      refs={"note_id": row["id"], "container": did, "author": author, "thread": thread,
                            "speaker": speaker.words(), "by": speaker.kind,
                            # how it reached the agent: the note names this node as a recipient, or mentions it
                            "how": "recipient" if row["to_me"] and agent == self_did else "mention",
                            **({"topic": row["topic"]} if row["topic"] else {})})
            out.append(e)
            if noise == "flood":
                floods.setdefault((actor, agent, at_ms // HOUR_MS), []).append(e)
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
    thread after it. Looks at the notes of the window [max_note_age_days (at most retention_days),
    unanswered_hours] ago; an episode already known (its event row) is skipped."""
    until = now_ms - int(cfg.unanswered_hours * HOUR_MS)
    since = now_ms - min(int(cfg.max_note_age_days * DAY_MS), read_window_ms(cfg))  # within retention, as notes
    if until <= since or until <= 0:
        return []
    found = row_dicts(db.conn.execute(  # only the notes that may be addressed, each a range scan on its own index
        f"SELECT {_COLUMNS} FROM notes n WHERE n.id IN (SELECT m.id FROM container_recipients r CROSS JOIN notes m"
        " ON m.container_did = r.did WHERE r.recipient = :me AND m.timestamp >= :since AND m.timestamp < :until"
        " UNION SELECT id FROM notes INDEXED BY reactor_notes_mentions WHERE mentions NOT IN ('', '[]') AND"
        " timestamp >= :since AND timestamp < :until UNION SELECT id FROM notes INDEXED BY reactor_notes_person"
        " WHERE source IN ('cli', 'user') AND timestamp >= :since AND timestamp < :until)"
        f" AND n.hidden = 0 AND {_ADDRESSED} ORDER BY n.timestamp DESC LIMIT :limit",
        {"me": self_did, "since": format_ms(max(0, since)), "until": format_ms(until), "limit": MAX_THREAD_NOTES}))
    newest: dict[tuple[str, str], dict] = {}
    local = frozenset(cfg.local_agents) | {self_did}
    for row in found:  # newest first: the first row of a thread is its newest
        if row["topic"] == ESCALATION_TOPIC:
            continue  # an escalation's own follow-up is its check, not a thread to answer
        thread = row["topic"] or (row["agent_did"] or self_did)
        for agent in addressees(row, self_did=self_did, local=local, aliases=aliases):
            newest.setdefault((agent, thread), row)
    keys = {(a, t): f"unanswered:{a}:{t}:{_did(row)}" for (a, t), row in newest.items()}
    known = _known(db, list(keys.values()))  # as for notes: a known episode is not read again (no new event later)
    out = []
    for (agent, thread), row in newest.items():
        if keys[(agent, thread)] in known or _answered(db, row, self_did=self_did):
            continue
        did = _did(row)
        out.append(Event(event_type="thread.unanswered", subject=thread, agent=agent, severity=Severity.P3,
                         dedupe_key=keys[(agent, thread)], suggested_route="agent",
                         required_trace=(M, B), at_ms=_ms(row["timestamp"], now_ms), source="threads",
                         summary=summary_of(row, self_did),
                         refs={"note_id": row["id"], "container": did, "thread": thread,
                               "author": row["agent_did"] or self_did, "speaker": speaker_of(row, self_did).words(),
                               "by": speaker_of(row, self_did).kind,
                               **({"topic": row["topic"]} if row["topic"] else {})}))
    return out


def _young_chat(row: dict, since_ms: int, self_did: str, local: frozenset[str], aliases) -> bool:
    """A chat message (topic ``chat`` or ``chat:<thread>``) the node wrote for someone, to this node
    alone, written after ``since_ms``."""
    topic = row["topic"] or ""
    return (row["agent_did"] in (None, self_did) and row["source"] in PERSON_SOURCES
            and (topic == "chat" or topic.startswith("chat:")) and _ms(row["timestamp"], 0) > since_ms
            and addressees(row, self_did=self_did, local=local, aliases=aliases) == [self_did])


def _did(row: dict) -> str:
    return row["container_did"] or f"local-{row['id']}"


def _known(db: Database, keys: list[str]) -> set[str]:
    """The keys among ``keys`` that already have an event row (unique index probes, 500 at a time)."""
    out: set[str] = set()
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        out.update(k for (k,) in db.conn.execute(
            f"SELECT dedupe_key FROM reactor_events WHERE dedupe_key IN ({', '.join('?' * len(part))})", part))
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

