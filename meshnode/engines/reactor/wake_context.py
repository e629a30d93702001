"""The wake context: what a woken agent is told, as JSON (stored with the job) and Markdown (design 8).

``build`` is pure: the job, its events, and ``extras`` the driver read from the store (due tasks,
liveness, waiting-on-person rows, shared-attention counts, display names). ``render_md`` turns it
into at most ``max_bytes`` of Markdown: the header, the required outcome and the hard limits always
fit; the other sections are filled item by item, most urgent first, until the budget is spent, and
what did not fit is counted ("and N more"), never silently dropped.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from meshnode.engines.reactor.types import Event, TraceKind, WakeJob

SECTION_ITEMS = 10
BODY_CHARS = 500
FORBIDDEN = ("no broadcast (direct messages only)", "no fund movement", "no key signing for others",
             "no destructive host changes")
_TYPE_NAMES = {"note.direct": "direct", "note.question": "question", "note.reply": "reply",
               "note.escalation": "escalation", "task.offer": "offer"}


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _cut(text: Any, n: int = BODY_CHARS) -> str:
    s = str(text)
    return s if len(s) <= n else s[: n - 1] + "…"


def build(job: WakeJob, events: list[Event], extras: dict | None, cfg) -> dict:
    """The JSON form of a wake context (sections of design 8)."""
    extras = extras or {}
    names: dict = extras.get("names") or {}
    ordered = sorted(events, key=lambda e: (int(e.severity), e.at_ms, e.dedupe_key))
    limit = cfg.digest_items
    inbox = []
    for e in ordered[:limit]:
        item = {
            "key": e.dedupe_key, "type": _TYPE_NAMES.get(e.event_type, e.event_type), "event_type": e.event_type,
            "severity": f"P{int(e.severity)}", "subject": _cut(e.subject, 200), "summary": _cut(e.summary),
            "agent": e.agent, "at": _iso(e.at_ms),
            "required": [k.value for k in e.required_trace if k != TraceKind.NONE],
        }
        for ref in ("note_id", "author", "speaker", "thread", "lineage", "did"):
            if ref in e.refs:
                item[ref] = e.refs[ref]
        if "author" in item and str(item["author"]) in names:
            item["from_name"] = names[str(item["author"])]
        inbox.append(item)
    required = sorted({k.value for e in events for k in e.required_trace if k not in (TraceKind.NONE, TraceKind.RESOLVED)})
    return {
        "header": {"agent_id": job.agent, "job_id": job.job_id, "generated_at": _iso(job.created_ms),
                   "reason": list(job.reason), "priority": f"P{int(job.priority)}"},
        "due_tasks": list(extras.get("due_tasks") or [])[:SECTION_ITEMS],
        "inbox": inbox,
        "inbox_more": max(0, len(ordered) - limit),
        "liveness": list(extras.get("liveness") or [])[:SECTION_ITEMS],
        "waiting_on_person": list(extras.get("waiting_on_person") or [])[:SECTION_ITEMS],
        "shared_attention": dict(extras.get("shared_attention") or {}),
        "required_outcome": {"traces": required, "note": "status-only replies do not count"},
        "routing": {str(name): str(did) for did, name in list(names.items())[:SECTION_ITEMS]},  # name -> DID
        "limits": {"max_outgoing": cfg.max_outgoing_per_run, "max_ticks": cfg.max_ticks,
                   "max_runtime_s": job.max_runtime_s, "forbidden": list(FORBIDDEN),
                   "final_report": "end with the final report (reactor_report)"},
    }


def _item_line(item: Any) -> str:
    if isinstance(item, dict):
        return "- " + "; ".join(f"{k}: {_cut(v, 200)}" for k, v in item.items() if v not in (None, "", []))
    return f"- {_cut(item)}"


def _inbox_line(i: dict, woken: str) -> str:
    who = i.get("from_name") or i.get("speaker") or i.get("author") or ""  # speaker: by provenance
    said = who and not str(i.get("summary", "")).startswith(f"{who}:")  # a note's summary names its sender
    head = f"- [{i['severity']}] {i['type']} `{i['key']}`" + (f" from {who}" if said else "")
    if i.get("agent") and i["agent"] != woken:  # routed to the coordinator: whose it is
        head += f" (for {i['agent']})"
    need = ", ".join(i.get("required") or []) or "none"
    return f"{head}: {i['summary']} — needs: {need}"


# What each required trace asks the woken agent to do, in the words of its own commands.
TRACE_HINTS = {
    "receipt": "answer the offer: task_accept or task_refuse",
    "task_update": "a new version or entry on the task: task_update, task_progress or task_done",
    "blocker": "or name the blocker and its reason (20 characters at least)",
    "message": "a direct reply to the note's author or thread",
    "ack": "a note that links or quotes the note it answers",
    "decision": "the person decides (confirmations, drafts, held commands)",
    "heartbeat": "the peer is heard again",
    "vote": "this node's vote at that height",
}


def _outcome(trace: str) -> str:
    hint = TRACE_HINTS.get(trace)
    return f"- {trace}: {hint}\n" if hint else f"- {trace}\n"


def render_md(ctx: dict, max_bytes: int) -> str:
    """Markdown of at most ``max_bytes`` UTF-8 bytes."""
    h = ctx["header"]
    head = (f"# Wake {h['job_id']}\n\nAgent: {h['agent_id']} · priority {h['priority']} · "
            f"reason: {', '.join(h['reason'])} · generated {h['generated_at']}\n")
    req = ctx["required_outcome"]
    lim = ctx["limits"]
    tail = ("\n## Required outcome (any one per item)\n" + "".join(_outcome(t) for t in req["traces"]) + f"- {req['note']}\n"
            "\n## Hard limits\n"
            f"- at most {lim['max_outgoing']} outgoing messages; {lim['max_ticks']} ticks; "
            f"{lim['max_runtime_s']} s\n" + "".join(f"- {f}\n" for f in lim["forbidden"]) +
            f"- {lim['final_report']}\n")
    sections: list[tuple[str, list[str], int]] = [
        ("Actionable inbox", [_inbox_line(i, h["agent_id"]) for i in ctx["inbox"]], ctx.get("inbox_more", 0)),
        ("Due tasks", [_item_line(t) for t in ctx["due_tasks"]], 0),
        ("Liveness", [_item_line(t) for t in ctx["liveness"]], 0),
        ("Waiting on a person", [_item_line(t) for t in ctx["waiting_on_person"]], 0),
        ("Shared attention", [f"- {k}: {v}" for k, v in ctx["shared_attention"].items()], 0),
        ("Canonical routing", [f"- {a} -> {c}" for a, c in ctx["routing"].items()], 0),
    ]
    budget = max_bytes - len(head.encode()) - len(tail.encode())
    body = []
    for title, lines, more in sections:
        if not lines:
            continue
        block = f"\n## {title}\n"
        cost = len(block.encode()) + 40
        if cost > budget:
            break
        kept = []
        for line in lines:
            line = line.rstrip() + "\n"
            n = len(line.encode())
            if cost + n + 40 > budget:
                break
            kept.append(line)
            cost += n
        dropped = len(lines) - len(kept) + more
        block += "".join(kept) + (f"- and {dropped} more\n" if dropped else "")
        body.append(block)
        budget -= len(block.encode())
    out = head + "".join(body) + tail
    raw = out.encode()
    if len(raw) > max_bytes:  # only when header/tail alone exceed the budget
        out = raw[: max_bytes].decode("utf-8", errors="ignore")
    return out
