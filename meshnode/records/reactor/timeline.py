"""The reactor's story as a person reads it (/reactor, issue 34): its wakes newest first, each
told in words — what woke whom, why (the signals, as the reactor summarized them), what the agent
did (the ticks it ran in the wake, their commands, its final report), what was escalated — and
the signals it let pass (not woken: a cooldown, a budget, noise), between them by time.

Only words and names leave here besides the ids (``job_id``, ``key``) a page folds away: a DID
inside a reason is replaced by its name (this node's own by "the agent"). Bounded: at most
``MAX_LIMIT`` wakes, each with at most ``MAX_SIGNALS`` signals and ``MAX_ESCALATIONS`` escalations.
Run with ``store.read``."""

from __future__ import annotations

import json
import re

from meshnode.records.reactor.audit import _rows  # the JSON columns decoded as the audit reads them
from meshnode.store import names as store_names
from meshnode.store.database import sql_errors

MAX_LIMIT = 100
MAX_SIGNALS = 20
MAX_ESCALATIONS = 10
_DID = re.compile(r"did:(?:key|hmp):[A-Za-z0-9._:%-]+")

# a job's status, as the sentence says it
_STATUS_WORDS = {
    "queued": "waiting to start", "leased": "about to start", "running": "working on it",
    "checking": "done; the reactor is checking what it did", "ok": "done", "failed": "failed",
    "interrupted": "interrupted", "skipped": "skipped",
}
# a reason (the rule that fired), as words
_REASON_WORDS = {
    "direct_note": "a note addressed to it", "mention": "a mention", "task_assigned": "a task given to it",
    "task_due": "a task due", "task_overdue": "an overdue task", "offer": "an offer of a task",
    "liveness": "a peer gone quiet", "escalation": "an escalation", "reminder": "a reminder",
    "task_progress": "progress on a task it gave", "task_result": "a result to review",
}
# a signal's type, as words (others: the type with its dots and underscores as spaces)
_EVENT_WORDS = {
    "note.direct": "a note to it", "note.mention": "a mention of it", "task.offer": "an offer of a task",
    "task.assigned": "a task given to it", "task.due": "a task due", "task.overdue": "an overdue task",
    "peer.silent": "a peer gone quiet", "task.progress": "progress on a task it gave",
    "task.result": "a result to review",
}
# the last decision on a signal that did not wake, as words
_DECISION_WORDS = {
    "woken": "it woke the agent", "coalesced": "joined a wake already under way", "settled": "settled",
    "noise": "let pass as noise", "unknown_agent": "nobody here is its addressee",
    "digest_only": "kept for the next digest", "routed_coordinator": "sent on to the coordinator",
    "held": "held for later (a cooldown or the hourly budget)", "pending": "waiting for a wake",
    "digest": "kept for the next digest", "skipped": "skipped", "trace_ok": "answered as required",
    "trace_missing": "the agent left no trace of an answer", "interrupted": "the wake was interrupted",
    "escalated": "escalated", "escalation_capped": "no more escalations (the cap is reached)",
    "report_mismatch": "the agent's report did not match what it did",
    "to_person": "told to you in the inbox (the agent has no LLM)",
    "agent_off": "let pass (the agent has no LLM; nothing to tell you)",
}


def _words(table: dict, value: str) -> str:
    return table.get(value) or str(value).replace("_", " ").replace(".", " ")


def _joined(words: list[str]) -> str:
    """["a", "b", "c"] -> "a, b and c" ("a signal" for none)."""
    if not words:
        return "a signal"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def names(db, own_did: str | None) -> dict[str, str]:
    """DID -> name: this node's own as "the agent", the others by their petname or the name they gave."""
    out = store_names.named(db)
    if own_did:
        out[own_did] = "the agent"
    return out


def named(text: str, known: dict[str, str]) -> str:
    """``text`` with every DID in it replaced by its name (an unknown DID shortened to its end)."""
    return _DID.sub(lambda m: known.get(m.group(0)) or f"…{m.group(0)[-8:]}", str(text or ""))


def _signal(e: dict, known: dict) -> dict:
    return {"key": e["dedupe_key"], "at_ms": e.get("at_ms") or e.get("seen_ms"),
            "what": _words(_EVENT_WORDS, e.get("event_type") or "a signal"),
            "text": named(e.get("summary") or e.get("subject") or "", known), "severity": e.get("severity")}


def _report_words(report) -> str:
    """The agent's final report in a sentence ("" without one)."""
    if not isinstance(report, dict):
        return ""
    parts = []
    for key, one, many in (("processed_messages", "message read", "messages read"),
                           ("task_updates", "task updated", "tasks updated"),
                           ("outgoing_messages", "message sent", "messages sent")):
        n = len(report.get(key) or [])
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    if report.get("blocked"):
        parts.append(f"blocked: {str(report['blocked'])[:200]}")
    if report.get("needs_human"):
        parts.append(f"asks for the person: {str(report['needs_human'])[:200]}")
    return "its report: " + ", ".join(parts) if parts else "its report says it had nothing to do"


def _ticks(db, job_ids: list[str]) -> dict[str, dict]:
    """job id -> {ticks, commands, first, last}: what the agent ran inside each wake."""
    out: dict[str, dict] = {}
    if not job_ids:
        return out
    marks = ",".join("?" * len(job_ids))
    for job, tick, summary in db.conn.execute(
            f"SELECT wake_job, tick, summary_json FROM tick_traces WHERE wake_job IN ({marks}) ORDER BY tick",
            job_ids):
        try:
            s = json.loads(summary) if summary else {}
        except ValueError:
            s = {}
        d = out.setdefault(job, {"ticks": 0, "commands": 0, "first": tick, "last": tick})
        d["ticks"] += 1
        d["last"] = tick
        d["commands"] += int(s.get("commands") or 0) if isinstance(s, dict) else 0
    return out


def _did_words(job: dict, ran: dict | None) -> str:
    status = job.get("status") or ""
    parts = []
    if ran:
        t, c = ran["ticks"], ran["commands"]
        parts.append(f"it thought {t} {'tick' if t == 1 else 'ticks'} (#{ran['first']}"
                     f"{'' if ran['first'] == ran['last'] else '–#' + str(ran['last'])})"
                     f" and gave {'no command' if not c else '1 command' if c == 1 else f'{c} commands'}")
    elif status in ("ok", "checking", "failed", "interrupted"):
        parts.append("it ran no tick")
    report = _report_words(job.get("report"))
    if report:
        parts.append(report)
    state = _words(_STATUS_WORDS, status)
    if status == "failed" and job.get("exit"):
        state += f" ({job['exit']})"
    return "; ".join([state, *parts])


def wakes(db, own_did: str | None, *, limit: int = 20, before_ms: int | None = None) -> list[dict]:
    """The timeline, newest first: wakes ``{kind: "wake", job_id, at_ms, agent, who, why, signals,
    did, status, escalations}`` and signals that woke nobody ``{kind: "signal", key, at_ms, text,
    outcome}``; ``before_ms``: the page before that time (the last item's ``at_ms``)."""
    limit = max(1, min(int(limit), MAX_LIMIT))
    before = int(before_ms) if before_ms is not None else 2 ** 62
    q = db.conn.execute
    with sql_errors("reading the reactor's timeline"):
        known = names(db, own_did)
        jobs = _rows(q("SELECT job_id, agent, priority, reason, status, created_ms, ended_ms, exit, events, report"
                       " FROM reactor_jobs INDEXED BY reactor_jobs_by_created WHERE created_ms < ?"
                       " ORDER BY created_ms DESC LIMIT ?", (before, limit)))
        loose = _rows(q("SELECT e.dedupe_key, e.event_type, e.subject, e.agent, e.severity, e.summary, e.at_ms,"
                        " e.seen_ms, e.status, (SELECT d.action FROM reactor_decisions d WHERE d.dedupe_key ="
                        " e.dedupe_key ORDER BY d.id DESC LIMIT 1) AS decision, (SELECT d.why FROM"
                        " reactor_decisions d WHERE d.dedupe_key = e.dedupe_key ORDER BY d.id DESC LIMIT 1) AS why"
                        " FROM reactor_events e WHERE e.job_id IS NULL AND e.status NOT IN ('noise', 'unknown') AND e.seen_ms < ?"
                        " ORDER BY e.seen_ms DESC LIMIT ?", (before, limit)))
        ran = _ticks(db, [j["job_id"] for j in jobs])
        items = []
        for j in jobs:
            keys = list(j["events"])[:MAX_SIGNALS] if isinstance(j["events"], list) else []
            signals = []
            if keys:
                signals = _rows(q(f"SELECT dedupe_key, event_type, subject, severity, summary, at_ms, seen_ms FROM"
                                  f" reactor_events e WHERE dedupe_key IN ({','.join('?' * len(keys))})"
                                  " ORDER BY at_ms", keys))
            escalations = q("SELECT to_id, level, text, sent_ms, container_id FROM reactor_escalations WHERE"
                            " job_id = ? ORDER BY sent_ms LIMIT ?", (j["job_id"], MAX_ESCALATIONS)).fetchall()
            reasons = j["reason"] if isinstance(j["reason"], list) else [j["reason"]]
            who = known.get(j["agent"]) or named(j["agent"], known)
            items.append({
                "kind": "wake", "job_id": j["job_id"],
                "sentence": f"The reactor woke {who} for {_joined([_words(_REASON_WORDS, str(r)) for r in reasons if r])}.", "at_ms": j["created_ms"], "ended_ms": j["ended_ms"],
                "agent": j["agent"], "who": who, "status": j["status"], "priority": j["priority"],
                "why": [_words(_REASON_WORDS, str(r)) for r in reasons if r],
                "signals": [_signal(e, known) for e in signals],
                "signals_more": max(0, len(j["events"] or []) - len(keys)) if isinstance(j["events"], list) else 0,
                "did": _did_words(j, ran.get(j["job_id"])),
                "ticks": ran.get(j["job_id"], {}).get("ticks", 0),
                "escalations": [{"to": known.get(to) or named(to, known), "to_id": to, "level": level,
                                 "text": named(text, known), "at_ms": sent,
                                 "sent": container is not None} for to, level, text, sent, container in escalations],
            })
        for e in loose:
            outcome = _words(_DECISION_WORDS, e.get("decision") or e.get("status") or "")
            why = named(e.get("why") or "", known)
            outcome += f" ({why})" if why and why not in outcome else ""
            text = named(e.get("summary") or e.get("subject") or "", known)
            items.append({"kind": "signal", "key": e["dedupe_key"], "at_ms": e["seen_ms"],
                          "sentence": f"A signal for {known.get(e['agent']) or named(e['agent'], known)}"
                                      + (" waits for a wake." if e.get("status") == "pending" and not e.get("decision")
                                         else f" did not wake it: {outcome}."),
                          "agent": e["agent"], "who": known.get(e["agent"]) or named(e["agent"], known),
                          "what": _words(_EVENT_WORDS, e.get("event_type") or "a signal"),
                          "text": text, "outcome": outcome})
    items.sort(key=lambda i: i["at_ms"] or 0, reverse=True)
    return items[:limit]
