"""What waits for the person, read in one place (issue 34, item 1): the agent's confirmation
requests, the unknown A2A parties' held messages, the commands the validators held, the agent's
open drafts, the reactor's escalations to the person, the notices of what would have woken the
agent while it cannot think (no LLM configured: one plain line each, ``reactor.person_lines``), and
the tasks of the person's goals that nobody took after they were taken back from a dead or overdue
holder (issue 35, defect 5).

Each is an item in words: ``kind``, ``id`` (``<kind>:<ref>``, ``ref`` being what the kind's own
action takes), who asks and what (names, never bare DIDs), when, the chat thread or A2A context
it belongs to, and the decisions it takes (``ACTIONS``: each one existing action, which stays the
one way to decide; ``meshnode.app.actions.inbox`` maps them). Nothing here decides anything.

``count`` is a handful of indexed counts, for every page load; ``items`` reads the rows in full.
Both run in the store's threads; the time is an argument. ``items`` is given the drafts as
``drafts.review`` returned them (that read records what the person was shown: the caller's).
"""

from __future__ import annotations

import json
import re

from meshnode.domain.gmp import reoffer
from meshnode.records.a2a import held_queue
from meshnode.records.gate.person import SESSION as AGENT_SESSION
from meshnode.records.reactor import person_lines
from meshnode.store import chat, speakers
from meshnode.store import names as store_names
from meshnode.store import names as store_names
from meshnode.store.database import Database, sql_errors

KINDS = ("confirmation", "a2a_message", "held_command", "draft", "drafts_accepted", "escalation", "notice",
         "task_unclaimed")
# kind -> its decisions: (name, label, whether it discards); the labels are what a person reads on a button
ACTIONS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "confirmation": (("approve", "Approve", False), ("reject", "Reject", True)),
    "a2a_message": (("approve", "Let it through", False), ("reject", "Reject", True)),
    "held_command": (("release", "Release (run it)", False), ("drop", "Drop", True)),
    "draft": (("accept", "Accept", False), ("reject", "Reject", True)),
    "drafts_accepted": (("commit", "Write them (commit)", False),),
    "escalation": (("dismiss", "Mark read", False),),
    "notice": (("dismiss", "Mark read", False),),
    "task_unclaimed": (("abandon", "Abandon the task", True),),
}
ESCALATION_TOPIC = "reactor-escalation"
OPERATOR = "operator"  # an escalation's to_id when it is for the person (engines.reactor.escalate.OPERATOR)
SUMMARY_CHARS = 160
DETAIL_CHARS = 4000
MAX_ITEMS = 500
_DID = re.compile(r"did:key:z[1-9A-HJ-NP-Za-km-z]{20,60}")  # an agent's DID (base.identity.did)


def count(db: Database, now_ms: int, own_did: str | None = None) -> dict:
    """How many items wait, by kind, and ``total``: indexed counts, no row read in full
    (``own_did``: this node's, whose goals' unclaimed tasks count; None counts none)."""
    q = db.conn.execute
    with sql_errors("counting what waits for the person"):
        confirmations = dict(q("SELECT session = ?, count(*) FROM gate_confirmations WHERE status = 'pending'"
                               " AND expires_ms > ? GROUP BY session = ?",
                               (held_queue.SESSION, now_ms, held_queue.SESSION)).fetchall())
        held = q("SELECT count(*) FROM held_commands WHERE status = 'held'").fetchone()[0]
        drafts = dict(q("SELECT status, count(*) FROM gate_drafts WHERE session = ? AND status IN"
                        " ('pending', 'accepted') GROUP BY status", (AGENT_SESSION,)).fetchall())
        escalations = q("SELECT count(DISTINCT e.container_id) FROM reactor_escalations e JOIN notes n ON"
                        " n.container_did = e.container_id WHERE e.to_id = ? AND n.read = 0 AND n.hidden = 0",
                        (OPERATOR,)).fetchone()[0]
    by_kind = {"confirmation": confirmations.get(0, 0), "a2a_message": confirmations.get(1, 0),
               "held_command": held, "draft": drafts.get("pending", 0),
               "drafts_accepted": 1 if drafts.get("accepted") else 0, "escalation": escalations,
               "notice": person_lines.unread_count(db),
               "task_unclaimed": len(_unclaimed_rows(db, own_did, now_ms))}
    return {"total": sum(by_kind.values()), "by_kind": by_kind}


def items(db: Database, own_did: str | None, now_ms: int, drafts: list[dict] | None,
          thread: str | None = None, limit: int = MAX_ITEMS) -> list[dict]:
    """Every item waiting, newest first (at most ``limit``); ``thread``: only those of that chat
    thread. ``drafts``: the open drafts as ``drafts.review`` gave them (None: not available here)."""
    names = _Names(db, own_did)
    with sql_errors("reading what waits for the person"):
        out = _confirmations(db, now_ms, names) + _held(db, names) + _escalations(db, names)
        out += _notices(db, names)
        out += _unclaimed(db, own_did, now_ms, names)
        out += _drafts(db, drafts or [])
    if thread is not None:
        out = [i for i in out if i["thread"] == thread]
    out.sort(key=lambda i: (i["when_ms"] or 0, i["id"]), reverse=True)
    return out[:limit]


def _item(kind: str, ref, who: str, summary: str, when_ms: int | None, *, thread: str | None = None,
          context_id: str | None = None, detail: str = "", **extra) -> dict:
    return {"kind": kind, "id": f"{kind}:{ref}", "ref": ref, "who": who, "summary": _cut(summary, SUMMARY_CHARS),
            "when_ms": when_ms, "thread": thread, "context_id": context_id or None, "detail": _cut(detail, DETAIL_CHARS),
            "actions": [{"name": n, "label": label, "discards": d} for n, label, d in ACTIONS[kind]], **extra}


def _confirmations(db: Database, now_ms: int, names: "_Names") -> list[dict]:
    rows = db.conn.execute("SELECT id, session, tool, args, risk, reason, created_ms, expires_ms FROM"
                           " gate_confirmations WHERE status = 'pending' AND expires_ms > ? ORDER BY id DESC LIMIT ?",
                           (now_ms, MAX_ITEMS)).fetchall()
    out = []
    for id_, session, tool, args_text, risk, reason, created, expires in rows:
        args = _load(args_text)
        if session == held_queue.SESSION and tool == held_queue.TOOL:
            party = speakers.clean(args.get("sender") or speakers._a2a_name(str(args.get("party", ""))))
            where = f" from {speakers.clean(args['client'])}" if args.get("client") else ""
            text = args["text"] if isinstance(args.get("text"), str) else str(args.get("framed", "")).split("\n", 1)[-1]
            out.append(_item("a2a_message", id_, f"A2A party \"{party}\" (unknown){where}",
                             f"A2A party \"{party}\" asks to reach the agent: {_first_line(text)}", created,
                             context_id=str(args.get("context_id") or ""), detail=text, expires_ms=expires))
            continue
        who = "the agent" if session == AGENT_SESSION else f"the agent (session {speakers.clean(session)})"
        out.append(_item("confirmation", id_, who, f"{who} asks to {_tool_words(tool, args, names)}", created,
                         thread=names.thread_of(args), detail=f"{reason or ''}\n{names.words(json.dumps(args, ensure_ascii=False))}".strip(),
                         risk=risk, expires_ms=expires))
    return out


def _held(db: Database, names: "_Names") -> list[dict]:
    rows = db.conn.execute("SELECT id, tick, type, command, kind, reason, created_ms FROM held_commands WHERE"
                           " status = 'held' ORDER BY id DESC LIMIT ?", (MAX_ITEMS,)).fetchall()
    out = []
    for id_, tick, type_, command, kind, reason, created in rows:
        body = _load(command)
        args = body.get("args") if isinstance(body.get("args"), dict) else {}
        why = "the validators rejected it" if kind == "rejected" else "no validator gave a verdict"
        out.append(_item("held_command", id_, "the agent",
                         f"held ({why}): the agent's {_tool_words(type_, args, names)}", created,
                         thread=names.thread_of(args), detail=f"{reason or ''}\n{names.words(json.dumps(args, ensure_ascii=False))}".strip(),
                         tick=tick))
    return out


def _drafts(db: Database, reviewed: list[dict]) -> list[dict]:
    times = dict(db.conn.execute("SELECT path, max(created_ms, coalesce(updated_ms, 0)) FROM gate_drafts WHERE"
                                 " session = ? AND status != 'committed'", (AGENT_SESSION,)).fetchall())
    out, accepted = [], []
    for d in reviewed:
        if d["status"] == "accepted":
            accepted.append(d)
        if d["status"] != "pending":
            continue
        what = "delete" if d.get("deleted") else "change"
        conflict = " (the real file changed since)" if d.get("conflict") else ""
        out.append(_item("draft", d["path"], "the agent", f"the agent drafts a {what} of {d['path']}{conflict}",
                         times.get(d["path"]), detail=d.get("diff") or "", path=d["path"]))
    if accepted:
        paths = [d["path"] for d in accepted]
        out.append(_item("drafts_accepted", "all", "you",
                         f"{len(paths)} accepted draft{'s' if len(paths) != 1 else ''} wait to be written:"
                         f" {', '.join(paths)}", max((times.get(p) or 0) for p in paths), paths=paths))
    return out


def _escalations(db: Database, names: "_Names") -> list[dict]:
    rows = db.conn.execute("SELECT e.container_id, e.agent, e.subject, e.text, e.sent_ms FROM reactor_escalations e"
                           " JOIN notes n ON n.container_did = e.container_id WHERE e.to_id = ? AND n.read = 0"
                           " AND n.hidden = 0 ORDER BY e.sent_ms DESC LIMIT ?", (OPERATOR, MAX_ITEMS)).fetchall()
    grouped: dict[str, list] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    out = []
    for did, group in grouped.items():
        _, agent, subject, text, sent = group[0]
        more = f" (and {len(group) - 1} more)" if len(group) > 1 else ""
        about = names.words(subject or _first_line(text))
        out.append(_item("escalation", did, "the reactor",
                         f"the reactor tells you about {names.agent(agent)}: {about}{more}", sent,
                         detail="\n\n".join(names.words(r[3]) for r in group), note=did))
    return out


# how a note reached an agent that cannot think, as the person's line says it (engines/reactor/agent_off.py)
_NOTE_VERBS = {"note.question": "asked you", "note.reply": "replied to you", "note.escalation": "escalated to you"}


def _notices(db: Database, names: "_Names") -> list[dict]:
    """One plain line per signal the agent would have been woken for (it cannot think: no LLM is
    configured): "<who> mentioned you: <the note's first line>", the note in full as the detail."""
    out = []
    for row in person_lines.unread(db, MAX_ITEMS):
        refs, etype = row["refs"], row["event_type"]
        container = refs.get("container") if isinstance(refs.get("container"), str) else None
        who = _notice_who(refs, names)
        if etype.startswith("note.") and etype != "note.flood":
            text = _note_text(db, container) if container else None
            verb = _NOTE_VERBS.get(etype) or ("wrote to you" if refs.get("how") == "recipient" else "mentioned you")
            shown = text if text is not None else row["summary"].split(": ", 1)[-1]
            line, detail = f"{who} {verb}: {_first_line(shown)}", names.words(shown)
        elif etype == "note.flood":
            line, detail = f"{who} sent {refs.get('count', 'many')}+ more notes within the hour", ""
        else:
            line, detail = names.words(row["summary"]), ""
        out.append(_item("notice", row["id"], who if etype.startswith("note.") else "the reactor", line,
                         row["at_ms"], thread=names.thread_of({"reply_to": container}) if container else None,
                         detail=detail, note=container, event_type=etype))
    return out


def _notice_who(refs: dict, names: "_Names") -> str:
    """Who a notice is from: a peer by its name, an A2A party as the note's speaker words."""
    author = refs.get("author")
    if refs.get("by") == "peer" and isinstance(author, str) and author.startswith("did:"):
        return names.peer(author)
    speaker = refs.get("speaker")
    if isinstance(speaker, str) and speaker:
        return names.words(speaker)
    return names.peer(author) if isinstance(author, str) and author.startswith("did:") else "someone"


def _note_text(db: Database, container_did: str) -> str | None:
    row = db.conn.execute("SELECT text FROM notes WHERE container_did = ?", (container_did,)).fetchone()
    return row[0] if row is not None and isinstance(row[0], str) else None


def _unclaimed_rows(db: Database, own_did: str | None, now_ms: int) -> list[tuple]:
    """Tasks of this node's goals (or created by it) taken back from their holder and still unheld
    past the bound (``domain.gmp.reoffer.unclaimed``): (lineage, title, goal title, taken back at ms)."""
    own_did = own_did or store_names.home_did(db)  # a caller without the key: the CLI on a stopped node's home
    if own_did is None:
        return []
    marks = ",".join("?" * len(reoffer.TAKEN_BACK))
    rows = db.conn.execute(
        "SELECT t.lineage, t.name, g.name, t.timestamp_ms, t.status, t.reason, t.assigned_to FROM tasks t"
        f" JOIN goals g ON g.lineage = t.goal_lineage WHERE t.status = 'pending' AND t.reason IN ({marks})"
        " AND (g.creator_did = ? OR t.creator_did = ?) ORDER BY t.timestamp_ms LIMIT ?",
        (*reoffer.TAKEN_BACK, own_did, own_did, MAX_ITEMS)).fetchall()
    return [(lin, title, goal, at) for lin, title, goal, at, status, reason, holders in rows
            if reoffer.unclaimed(status, reason, _json_list(holders), at or 0, now_ms)]


def _unclaimed(db: Database, own_did: str | None, now_ms: int, names: "_Names") -> list[dict]:
    out = []
    for lineage, title, goal, at in _unclaimed_rows(db, own_did, now_ms):
        removed = [r[0] for r in db.conn.execute(
            "SELECT DISTINCT assignee FROM task_holders WHERE lineage = ? AND ended IN (?, ?) ORDER BY assignee",
            (lineage, *reoffer.TAKEN_BACK))]
        whom = ", ".join(names.peer(d) for d in removed) or "its holder"
        out.append(_item("task_unclaimed", lineage, "goals",
                         f"nobody took task \"{speakers.clean(title or '')}\" (goal \"{speakers.clean(goal or '')}\")"
                         f" after it was taken back from {whom}", at,
                         detail=f"Offer it to someone: meshnode task assign {lineage} --to NAME\n"
                                f"or abandon it here.", task=lineage))
    return out


def _json_list(text) -> list:
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []
    return value if isinstance(value, list) else []


class _Names:
    """DIDs in words: a peer's name when known, this node as "this node"; chat threads of notes."""

    def __init__(self, db: Database, own_did: str | None):
        self.db, self.own = db, own_did
        self._peers: dict[str, str] | None = None

    def peer(self, did: str) -> str:
        if did == self.own:
            return "this node"
        if self._peers is None:
            self._peers = store_names.named(self.db, own_did=self.own)  # petnames, then announced names
        name = self._peers.get(did)
        return f"\"{name}\"" if name else f"an unnamed peer (…{did[-8:]})"

    def agent(self, agent: str) -> str:
        return "this node's agent" if agent in ("core", "self", self.own) else (
            self.peer(agent) if agent.startswith("did:") else f"agent \"{speakers.clean(agent)}\"")

    def words(self, text: str) -> str:
        return _DID.sub(lambda m: self.peer(m.group(0)), str(text or ""))

    def thread_of(self, args: dict) -> str | None:
        """The chat thread a call answers in: its ``reply_to`` note's, or a ``thread`` it names."""
        if isinstance(args.get("thread"), str) and re.fullmatch(r"[A-Za-z0-9_-]{16}", args["thread"]):
            return args["thread"]
        did = args.get("reply_to")
        if not isinstance(did, str) or not did:
            return None
        row = self.db.conn.execute("SELECT container_did, topic FROM notes WHERE container_did = ?", (did,)).fetchone()
        return chat.thread_name(*row) if row else None


def _tool_words(tool: str, args: dict, names: _Names) -> str:
    """A call in words: "send a message to "alice": hello…", "delete the file notes.txt"."""
    text = _first_line(str(args.get("text") or ""))
    if tool == "send_message":
        return f"send a message to {names.peer(str(args.get('to', '')))}: {text}"
    if tool == "note_add":
        if args.get("reply_to"):
            return f"answer in the conversation: {text}"
        return f"write a {args.get('audience', 'private')} note: {text}"
    if tool in ("delete_file", "write_file", "patch_file", "read_file") and args.get("path"):
        return f"{tool.split('_')[0]} the file {args['path']}"
    if tool == "http_fetch" and args.get("url"):
        return f"fetch {args['url']}"
    if tool == "run_command":
        return f"run {' '.join([str(args.get('program', 'a program')), *map(str, args.get('args') or [])])}"
    shown = ", ".join(f"{k}={_cut(names.words(json.dumps(v, ensure_ascii=False)), 40)}" for k, v in list(args.items())[:4])
    return f"run {tool}" + (f" ({shown})" if shown else "")


def _first_line(text: str) -> str:
    line = next((s.strip() for s in str(text).splitlines() if s.strip()), "")
    return _cut(line, 100)


def _cut(text: str, n: int) -> str:
    text = str(text or "")
    return text if len(text) <= n else text[:n - 1] + "…"


def _load(text) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
