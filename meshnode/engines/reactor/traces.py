"""Trace check (design 10.1, 10.2): what durable trace a woken agent left after its job
started, and whether its final report's claims exist. Reads only; run with ``store.read``.

The agent's own writing: for this node's core (its DID), notes it signed with source ``llm`` or
``llm:task`` and GMP containers it signed; for an external agent, the notes of this node that
carry ``llm_id = <agent name>`` (written through the CLI, design 17 question 4). A note counts
as a message or an ack only when it is not status-only (``report.status_only``). Marking a note
read is never a trace.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from meshnode.base.container import format_ms
from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp.reads import resolve as resolve_task
from meshnode.records.gmp.reads import rows as row_dicts
from meshnode.engines.reactor.adapters_notes import ESCALATION_TOPIC
from meshnode.engines.reactor.report import status_only
from meshnode.base.config.reactor import DEFAULTS
from meshnode.engines.reactor.types import Trace, TraceKind

if TYPE_CHECKING:
    from meshnode.engines.reactor.types import FinalReport, TraceCheck
    from meshnode.store.database import Database

MAX_NOTES = 200                  # the agent's notes looked at per check
MIN_BLOCKER_REASON = 20
TERMINAL_TASK = ("completed", "failed", "abandoned")


class _Agent:
    """What the agent wrote since the job started, read at most once per check."""

    def __init__(self, db: Database, agent: str, since_ms: int, *, self_did: str, phrases):
        self.db, self.agent, self.since, self.self_did = db, agent, since_ms, self_did
        self.is_self = agent == self_did
        if self.is_self:
            who, params = "n.agent_did = ? AND n.source IN ('llm', 'llm:task')", (self_did,)
        elif agent.startswith("did:"):  # another node (a watch on a peer): what it wrote, as received
            who, params = "n.agent_did = ?", (agent,)
        else:  # an external agent of this node: what it wrote through the CLI
            who, params = "n.agent_did = ? AND n.llm_id = ?", (self_did, agent)
        self.notes = row_dicts(db.conn.execute(
            "SELECT n.id, n.container_did, n.topic, n.text, n.mentions, n.hashtags, n.tags, n.timestamp FROM notes n"
            f" INDEXED BY reactor_notes_by_author WHERE {who} AND n.timestamp >= ? ORDER BY n.timestamp LIMIT ?",
            (*params, format_ms(max(0, since_ms)), MAX_NOTES)))
        dids = [n["container_did"] for n in self.notes]
        recipients = _by_did(db, "SELECT did, recipient FROM container_recipients WHERE did IN ({})", dids)
        links = _by_did(db, "SELECT source_did, target_did FROM container_links WHERE source_did IN ({})", dids)
        for n in self.notes:
            n["substantive"] = not status_only(n["text"] or "", phrases)
            n["recipients"] = recipients.get(n["container_did"], set())
            n["links"] = links.get(n["container_did"], set())
            n["tagset"] = {t.casefold() for t in _list(n["tags"]) + _list(n["hashtags"])}
            n["mention_set"] = set(_list(n["mentions"]))

    def note_trace(self, key: str, kind: TraceKind, refs: Mapping) -> Trace | None:
        container, author, topic = refs.get("container"), refs.get("author"), refs.get("topic")
        target = refs.get("did") if author is None else author
        for n in self.notes:
            if not n["substantive"]:
                continue
            linked = container is not None and (container in n["links"] or str(container) in (n["text"] or ""))
            if kind is TraceKind.ACK and not linked:
                continue
            if kind is TraceKind.MESSAGE and not (
                    linked or (topic and n["topic"] == topic)
                    or (target and (target in n["recipients"] or target in n["mention_set"]))
                    or (target == self.self_did and not topic)      # the person's own note: the agent's note
                    or not (container or target or topic)):         # no subject to answer (self.check)
                continue
            return Trace(key, kind, n["container_did"] or str(n["id"]), self.agent, _ms(n["timestamp"]))
        return None

    def blocker_note(self, key: str) -> Trace | None:
        for n in self.notes:
            if "blocker" in n["tagset"] and len((n["text"] or "").strip()) >= MIN_BLOCKER_REASON:
                return Trace(key, TraceKind.BLOCKER, n["container_did"] or str(n["id"]), self.agent,
                             _ms(n["timestamp"]))
        return None


def _by_did(db: Database, sql: str, dids: list[str]) -> dict[str, set[str]]:
    """``sql`` (pairs of a container DID and a value) for all ``dids`` in one query (at most
    MAX_NOTES of them), grouped by DID: one scan per check instead of one per note."""
    out: dict[str, set[str]] = {}
    if dids:
        for did, value in db.conn.execute(sql.format(",".join("?" * len(dids))), dids):
            out.setdefault(did, set()).add(value)
    return out


def _list(text) -> list[str]:
    try:
        v = json.loads(text) if text else []
    except ValueError:
        return []
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _ms(ts: str) -> int:
    from meshnode.base.container import parse_ms

    try:
        return parse_ms(ts)
    except Exception:  # a malformed local timestamp: the trace still counts, at time 0
        return 0


def _task_update(db: Database, key: str, lineage: str, since: int, signer: str) -> Trace | None:
    row = db.conn.execute(
        "SELECT did, timestamp_ms FROM gmp_entries WHERE lineage = ? AND signer = ? AND timestamp_ms >= ?"
        " ORDER BY timestamp_ms LIMIT 1", (lineage, signer, since)).fetchone()
    if row is None:
        row = db.conn.execute(
            "SELECT c.did, c.timestamp_ms FROM container_versions v JOIN containers c ON c.did = v.did WHERE"
            " v.root = ? AND c.sender_did = ? AND c.timestamp_ms >= ? ORDER BY c.timestamp_ms LIMIT 1",
            (lineage, signer, since)).fetchone()
    return Trace(key, TraceKind.TASK_UPDATE, row[0], signer, row[1]) if row else None


def _any_update(db: Database, key: str, since: int, signer: str) -> Trace | None:
    row = db.conn.execute("SELECT did, timestamp_ms FROM containers WHERE sender_did = ? AND timestamp_ms >= ? AND"
                          " class IN ('task', 'goal', 'workflow_entry') ORDER BY timestamp_ms LIMIT 1",
                          (signer, since)).fetchone()
    return Trace(key, TraceKind.TASK_UPDATE, row[0], signer, row[1]) if row else None


def _blocked_entry(db: Database, key: str, lineage: str, since: int, signer: str) -> Trace | None:
    row = db.conn.execute(
        "SELECT did, timestamp_ms FROM gmp_entries WHERE lineage = ? AND kind = 'blocked' AND signer = ? AND"
        " timestamp_ms >= ? LIMIT 1", (lineage, signer, since)).fetchone()
    return Trace(key, TraceKind.BLOCKER, row[0], signer, row[1]) if row else None


def _receipt(db: Database, key: str, offer: str, signer: str) -> Trace | None:
    """The answer to an offer: an acceptance or a refusal by this node. Its receipt does not count:
    the node signs it on arrival, before anyone thought about the offer (gmp.md 8)."""
    row = db.conn.execute("SELECT did, timestamp_ms FROM gmp_entries WHERE offer = ? AND signer = ? AND kind IN"
                          " ('acceptance', 'refusal') ORDER BY timestamp_ms LIMIT 1",
                          (offer, signer)).fetchone()
    return Trace(key, TraceKind.RECEIPT, row[0], signer, row[1]) if row else None


def _ms_ref(refs: Mapping, name: str) -> int:
    """A time in ``refs`` (ms), 0 when absent or not a 64-bit integer: a plug-in's refs are any short
    text or integer, and a check that raised would fail every scan from then on."""
    value = refs.get(name, 0)
    if isinstance(value, str) and value.strip().isascii() and value.strip().lstrip("-").isdigit():
        value = int(value)
    return value if type(value) is int and -2**63 <= value < 2**63 else 0


def _heartbeat(db: Database, key: str, did: str, after_ms: int) -> Trace | None:
    row = db.conn.execute("SELECT last_heard_ms FROM peer_liveness WHERE did = ? AND last_heard_ms > ?",
                          (did, after_ms)).fetchone()
    return Trace(key, TraceKind.HEARTBEAT, f"heard:{did}:{row[0]}", did, row[0]) if row else None


_PERSON = {"person.confirmation": ("gate_confirmations", "confirmation", "status != 'pending'"),
           "person.draft": ("gate_drafts", "draft", "status != 'pending'"),
           "person.held": ("held_commands", "held", "status NOT IN ('held', 'released', 'running')")}


def _decision(db: Database, key: str, etype: str, refs: Mapping, now_ms: int) -> Trace | None:
    table, ref, decided = _PERSON.get(etype, (None, None, None))
    if table is None or ref not in refs:
        return None
    row = db.conn.execute(f"SELECT status FROM {table} WHERE id = ? AND {decided}", (refs[ref],)).fetchone()
    if row is None:
        return None
    kind = TraceKind.RESOLVED if row[0] == "expired" else TraceKind.DECISION
    return Trace(key, kind, f"{ref}:{refs[ref]}:{row[0]}", "operator", now_ms)


def _resolved(db: Database, key: str, etype: str, refs: Mapping, now_ms: int) -> Trace | None:
    """The subject resolved by itself: the task closed, the offer expired or taken, the peer back."""
    lineage = refs.get("lineage")
    if etype.startswith("task.") and lineage:
        if etype == "task.offer":
            row = db.conn.execute("SELECT expires_ms FROM gmp_entries WHERE did = ?", (refs.get("offer"),)).fetchone()
            if row is not None and row[0] is not None and row[0] <= now_ms:
                return Trace(key, TraceKind.RESOLVED, f"offer_expired:{refs.get('offer')}", "", now_ms)
        row = db.conn.execute("SELECT status, container_did FROM tasks WHERE lineage = ?", (lineage,)).fetchone()
        if row is not None and row[0] in TERMINAL_TASK:
            return Trace(key, TraceKind.RESOLVED, row[1] or lineage, "", now_ms)
    if etype in ("liveness.stale", "liveness.dead") and refs.get("did"):
        t = _heartbeat(db, key, str(refs["did"]), _ms_ref(refs, "last_heard_ms"))
        if t is not None:
            return Trace(key, TraceKind.RESOLVED, t.ref, t.by, t.at_ms)
    return None


def _mentor_answer(db: Database, key: str, kinds, self_did: str, phrases) -> Trace | None:
    """A remote mentor's answer to an escalation about ``key`` (design 10.3): a note it wrote
    after the escalation went out, naming the escalation or event key or in the escalation topic
    addressed to this node, and not status-only."""
    kind = next((k for k in (TraceKind.ACK, TraceKind.MESSAGE) if k in kinds), None)
    if kind is None:
        return None
    for esc_key, to_id, sent in db.conn.execute(
            "SELECT key, to_id, sent_ms FROM reactor_escalations WHERE event_key = ? AND level = 1 AND"
            " to_id LIKE 'did:%' ORDER BY sent_ms LIMIT 5", (key,)).fetchall():
        for did, text, topic, ts in db.conn.execute(
                "SELECT n.container_did, n.text, n.topic, n.timestamp FROM notes n INDEXED BY reactor_notes_by_author"
                " WHERE n.agent_did = ? AND n.timestamp >= ? ORDER BY n.timestamp LIMIT ?",
                (to_id, format_ms(max(0, sent)), MAX_NOTES)):
            text = text or ""
            to_me = topic == ESCALATION_TOPIC and db.conn.execute(
                "SELECT 1 FROM container_recipients WHERE recipient = ? AND did = ?", (self_did, did)).fetchone()
            if (esc_key in text or key in text or to_me) and not status_only(text, phrases):
                return Trace(key, kind, did, to_id, _ms(ts))
    return None


def _report_blocked(db: Database, job_id: str) -> bool:
    row = db.conn.execute("SELECT report FROM reactor_jobs WHERE job_id = ?", (job_id,)).fetchone()
    try:
        report = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        return False
    return (isinstance(report, dict) and report.get("blocked") is True
            and len(str(report.get("blocked_reason", "")).strip()) >= MIN_BLOCKER_REASON)


def find(db: Database, check: TraceCheck, now_ms: int, *, self_did: str,
         phrases: tuple[str, ...] | None = None) -> list[Trace]:
    """One trace per event of the job that has one (the first kind found among its required
    ones, or RESOLVED when its subject resolved by itself); events without one are missing."""
    phrases = tuple(DEFAULTS["status_only_phrases"]) if phrases is None else phrases
    # the agent's notes (and each one's recipients and links): read only when a kind asks for them
    mine = functools.cache(lambda: _Agent(db, check.agent, check.since_ms, self_did=self_did, phrases=phrases))
    signer = self_did  # GMP containers are signed by the node, whichever of its agents acted
    blocked = _report_blocked(db, check.job_id)
    out = []
    for key, kinds, refs, etype in check.events:
        t = _resolved(db, key, etype, refs, now_ms) or _decision(db, key, etype, refs, now_ms)
        for kind in kinds:
            if t is not None:
                break
            if kind in (TraceKind.MESSAGE, TraceKind.ACK):
                t = mine().note_trace(key, kind, refs)
            elif kind is TraceKind.TASK_UPDATE:
                lin = refs.get("lineage")
                t = (_task_update(db, key, str(lin), check.since_ms, signer) if lin
                     else _any_update(db, key, check.since_ms, signer))
            elif kind is TraceKind.RECEIPT and refs.get("offer"):
                t = _receipt(db, key, str(refs["offer"]), signer)
            elif kind is TraceKind.HEARTBEAT and refs.get("did"):
                t = _heartbeat(db, key, str(refs["did"]), _ms_ref(refs, "last_heard_ms"))
            elif kind is TraceKind.BLOCKER:
                lin = refs.get("lineage")
                t = (_blocked_entry(db, key, str(lin), check.since_ms, signer) if lin else None) \
                    or mine().blocker_note(key)
                if t is None and blocked:
                    t = Trace(key, TraceKind.BLOCKER, f"report:{check.job_id}", check.agent, now_ms)
        if t is None:
            t = _mentor_answer(db, key, kinds, self_did, phrases)
        if t is not None:
            out.append(t)
    return out


# --- the final report ---------------------------------------------------------------------------


def _note_row(db: Database, ident: str):
    if str(ident).isdigit():
        return db.conn.execute("SELECT id, container_did, agent_did, source, llm_id, timestamp, topic FROM notes"
                               " WHERE id = ?", (int(ident),)).fetchone()
    return db.conn.execute("SELECT id, container_did, agent_did, source, llm_id, timestamp, topic FROM notes"
                           " WHERE container_did = ?", (str(ident),)).fetchone()


def _task_lineage(db: Database, ident: str) -> str | None:
    """The lineage of the task ``ident`` names as the agent is shown it (a short id, a lineage or a
    version's DID: ``gmp.reads.resolve``); a version of anything else by its root; else None."""
    try:
        return resolve_task(db, ident, "task")
    except MeshnodeError:
        row = db.conn.execute("SELECT root FROM container_versions WHERE did = ?", (ident,)).fetchone()
        return row[0] if row else None


def check_report(db: Database, report: FinalReport, since_ms: int, *, self_did: str, agent: str,
                 phrases: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The report's claims not found (design 10.2): a processed note must exist and have an
    answer (reply or ack) by the agent since the job started; a task update must exist, signed
    by this node since then; an outgoing message must be the agent's, written since then."""
    phrases = tuple(DEFAULTS["status_only_phrases"]) if phrases is None else phrases
    me = _Agent(db, agent, since_ms, self_did=self_did, phrases=phrases)
    out = []
    for ident in report.processed_messages:
        row = _note_row(db, ident)
        if row is None:
            out.append(f"processed_messages {ident}: no such note")
            continue
        refs = {"container": row[1], "author": row[2] or self_did, **({"topic": row[6]} if row[6] else {})}
        if me.note_trace("", TraceKind.MESSAGE, refs) is None:
            out.append(f"processed_messages {ident}: no reply or ack by {agent} since the wake")
    for ident in report.task_updates:
        lin = _task_lineage(db, str(ident))
        if lin is None:
            out.append(f"task_updates {ident}: no such task")
        elif _task_update(db, "", lin, since_ms, self_did) is None:
            out.append(f"task_updates {ident}: no task version or entry by this node since the wake")
    mine = {str(n["id"]) for n in me.notes} | {n["container_did"] for n in me.notes}
    for ident in report.outgoing_messages:
        if str(ident) not in mine:
            row = _note_row(db, ident)
            out.append(f"outgoing_messages {ident}: " + ("no such note" if row is None
                                                          else f"not written by {agent} since the wake"))
    return tuple(out)
