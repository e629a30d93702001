"""What waits for the person, read in one place (issue 34, item 1): the agent's confirmation
requests, the unknown A2A parties' held messages, the commands the validators held, the agent's
open drafts and the reactor's escalations to the person.

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

from meshnode.records.a2a import held_queue
from meshnode.records.gate.person import SESSION as AGENT_SESSION
from meshnode.store import chat, speakers
from meshnode.store import names as store_names
from meshnode.store.database import Database, sql_errors

KINDS = ("confirmation", "a2a_message", "held_command", "draft", "drafts_accepted", "escalation")
# kind -> its decisions: (name, label, whether it discards); the labels are what a person reads on a button
ACTIONS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "confirmation": (("approve", "Approve", False), ("reject", "Reject", True)),
    "a2a_message": (("approve", "Let it through", False), ("reject", "Reject", True)),
    "held_command": (("release", "Release (run it)", False), ("drop", "Drop", True)),
    "draft": (("accept", "Accept", False), ("reject", "Reject", True)),
    "drafts_accepted": (("commit", "Write them (commit)", False),),
    "escalation": (("dismiss", "Mark read", False),),
}
ESCALATION_TOPIC = "reactor-escalation"
OPERATOR = "operator"  # an escalation's to_id when it is for the person (engines.reactor.escalate.OPERATOR)
SUMMARY_CHARS = 160
DETAIL_CHARS = 4000
MAX_ITEMS = 500
_DID = re.compile(r"did:key:z[1-9A-HJ-NP-Za-km-z]{20,60}")  # an agent's DID (base.identity.did)


def count(db: Database, now_ms: int) -> dict:
    """How many items wait, by kind, and ``total``: indexed counts, no row read in full."""
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
               "drafts_accepted": 1 if drafts.get("accepted") else 0, "escalation": escalations}
    return {"total": sum(by_kind.values()), "by_kind": by_kind}


def items(db: Database, own_did: str | None, now_ms: int, drafts: list[dict] | None,
          thread: str | None = None, limit: int = MAX_ITEMS) -> list[dict]:
    """Every item waiting, newest first (at most ``limit``); ``thread``: only those of that chat
    thread. ``drafts``: the open drafts as ``drafts.review`` gave them (None: not available here)."""
    names = _Names(db, own_did)
    with sql_errors("reading what waits for the person"):
        out = _confirmations(db, now_ms, names) + _held(db, names) + _escalations(db, names)
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
