"""Messages of unknown parties held for a person's approval, kept as gate confirmation requests
(session ``a2a``, tool ``a2a_message``): the person sees and answers them where they answer the
agent's own requests (``meshnode confirm``, the web's confirmations), and the status of each is the
A2A task ``h-<number>-<nonce>`` (the nonce, unguessable and kept in the row's args, makes the id
unguessable: parties behind one proxy or NAT share an address and must not read each other's). Functions run in the store's threads, except ``framed``, ``text_of`` and ``task_of``."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING

from meshnode.store import chat
from meshnode.faces.a2a.admission import SESSION, TOOL, Party
from meshnode.records.a2a import held_queue
from meshnode.records.gate import confirm
from meshnode.store.database import Database

if TYPE_CHECKING:
    from a2a.types import Task

_COLUMNS = confirm._COLUMNS
HELD_FULL = "held_full: as many messages as may wait for a person's approval wait already; try again later"


def framed(party: Party, text: str) -> str:
    """The text as a person reads it among the held messages (and in a GMP task's description): who
    sent it over A2A, then the message. Never the agent's word on who sent it: that is the note's
    provenance row (``text_of`` gives the message alone to deliver)."""
    who = f"known party {party.name}" if party.known else f"unknown party {party.name!r} at {party.client}"
    return f"[A2A message from {who}]\n{text}"


def text_of(args: dict) -> str:
    """The message a held request carries, as the party wrote it: its own ``text``, or (a request held
    before it kept one) ``framed`` after the header line ``framed`` put first (a name with no line break)."""
    if isinstance(args.get("text"), str):
        return args["text"]
    return str(args.get("framed", "")).split("\n", 1)[-1]


def pending(db: Database, now_ms: int) -> int:
    """How many held messages wait for a person now (all parties)."""
    return db.conn.execute("SELECT COUNT(*) FROM gate_confirmations WHERE session = ? AND tool = ? AND status ="
                           " 'pending' AND expires_ms > ?", (SESSION, TOOL, now_ms)).fetchone()[0]


def hold(db: Database, party: Party, text: str, context_id: str, now_ms: int, ttl_ms: int, secret: bytes,
         shares: held_queue.Shares) -> dict | None:
    """The held message's request (the pending one when the same message is sent again); None when
    the party's, its address's, its subnet's or the whole queue's share is full (held_queue.refusal).
    Its nonce is a keyed hash of the rest (``secret``: the node's), so a message sent again is the
    same request, and nobody without the key computes it. A message sent with no contextId gets one
    (``a2a-<nonce part>``): its task names the context its conversation will have once delivered."""
    args = {"party": party.key, "sender": party.name, "client": party.client, "context_id": context_id,
            "framed": framed(party, text)}
    args["nonce"] = hmac.new(secret, json.dumps(args, sort_keys=True).encode(), hashlib.sha256).hexdigest()[:24]
    args["context_id"] = context_id or f"a2a-{args['nonce'][:16]}"
    same = db.conn.execute("SELECT 1 FROM gate_confirmations WHERE session = ? AND tool = ? AND args = ? AND status"
                           " = 'pending' AND expires_ms > ?", (SESSION, TOOL, json.dumps(args, sort_keys=True,
                                                                ensure_ascii=False), now_ms)).fetchone()
    if same is None and held_queue.refusal(db, party.key, party.client, now_ms, shares) is not None:
        return None
    # nothing the party wrote goes in the reason: the reactor's notice and the agent's context 4 quote it
    reason = f"an unknown party at {party.client} asks to talk to the agent over A2A (who it says it is"\
             " and its message: args sender and framed)"
    return confirm.request(db, SESSION, TOOL, args, "a2a", reason, now_ms, ttl_ms)


def row(db: Database, request_id: int) -> dict | None:
    found = db.conn.execute(f"SELECT {_COLUMNS} FROM gate_confirmations WHERE id = ? AND session = ? AND tool = ?",
                            (request_id, SESSION, TOOL)).fetchone()
    return confirm._row(found) if found else None


def approved(db: Database) -> list[dict]:
    return [r for r in confirm.approved(db, SESSION) if r["tool"] == TOOL]


claim, finish = confirm.claim, confirm.finish


INTERRUPTED = "the node stopped while delivering it; not delivered again (it may or may not have arrived)"


def settle_interrupted(db: Database) -> int:
    """At start: requests claimed by a previous run and never finished are failed, with the reason
    (not delivered again: a message reaches the agent at most once). Looked for before the write lock
    is taken: a node that starts while another process holds the database must not wait for it."""
    interrupted = json.dumps({"error": "interrupted while running"})
    if db.conn.execute("SELECT 1 FROM gate_confirmations WHERE session = ? AND tool = ? AND status = 'failed'"
                       " AND result = ? LIMIT 1", (SESSION, TOOL, interrupted)).fetchone() is None:
        return 0
    with db.transaction() as conn:
        return conn.execute("UPDATE gate_confirmations SET result = ? WHERE session = ? AND tool = ? AND status ="
                            " 'failed' AND result = ?", (json.dumps({"error": INTERRUPTED}), SESSION, TOOL,
                                                        json.dumps({"error": "interrupted while running"}))).rowcount


def decisions(db: Database, watched: set[int], now_ms: int) -> tuple[set[int], list[str]]:
    """The held messages pending now, and how those of ``watched`` that no longer wait ended
    ("rejected" by a person, or "expired"; approved ones are counted when delivered)."""
    marks = ",".join("?" * len(watched))
    rows = db.conn.execute(f"SELECT id, status, expires_ms FROM gate_confirmations WHERE session = ? AND tool = ? AND"
                           f" (status = 'pending' OR id IN ({marks or 'NULL'}))", (SESSION, TOOL, *watched)).fetchall()
    waiting = {r[0] for r in rows if r[1] == "pending" and r[2] > now_ms}
    ended = [r[1] if r[1] != "pending" else "expired" for r in rows if r[0] in watched and r[0] not in waiting]
    return waiting, [e for e in ended if e in ("rejected", "expired")]


def task_id(request: dict) -> str:
    return f"h-{request['id']}-{request['args'].get('nonce', '')}"


def parse_task_id(tid: str) -> tuple[int, str] | None:
    """``(number, nonce)`` of a held message's task id ``h-<number>-<nonce>`` (None: not one)."""
    number, _, nonce = tid[2:].partition("-")
    if not tid.startswith("h-") or not number.isdigit() or len(number) > 18 or not 0 < len(nonce) <= 40:
        return None
    return int(number), nonce


def owned_by(request: dict | None, nonce: str, party: Party) -> bool:
    """Whether ``party`` may read the held ``request``: it names the row's nonce (a guessed number is not
    enough), and it is the sender's party (a known party by its token; an unknown one, as tasks/get names
    no sender, by its address)."""
    if request is None or not hmac.compare_digest(request["args"].get("nonce", "").encode(), nonce.encode()):
        return False
    return request["args"].get("party") == party.key or not party.known and request["args"].get("client") == party.client


def _party_of(actor_id: str | None, label: str | None, party: Party) -> bool:
    """Whether a note whose provenance row names A2A party ``actor_id`` (and ``label``, the name it gave)
    is ``party``'s: a known party by its key; an unknown one, as tasks/get names no sender, by its
    address (any name it gave from there: its key is ``unknown:<address>:<name>``)."""
    if party.known:
        return actor_id == party.key
    return actor_id == f"unknown:{party.client}:{label or ''}"


def started_by(db: Database, own_did: str, tid: str, party_key: str) -> bool:
    """Whether conversation ``tid`` was started over A2A by the party ``party_key`` (its first message's
    provenance row: how a contextId that is a thread id is recognised after a restart, with no table of
    its own; never by the message's text, which anyone writes)."""
    if not chat._TID.fullmatch(tid):
        return False
    first = db.conn.execute(chat._ROWS + f" WHERE {chat.IN_THREAD} AND n.agent_did = :own"
                            " ORDER BY c.timestamp_ms, n.id LIMIT 1", {"tid": tid, "own": own_did}).fetchone()
    if first is None:
        return False
    row = db.conn.execute("SELECT kind, actor_id FROM provenance WHERE container_did = ?", (first[0],)).fetchone()
    return row is not None and row[0] == "a2a" and row[1] == party_key


def message_status(db: Database, own_did: str, did: str, party: Party) -> dict | None:
    """The thread of the message ``did`` that ``party`` sent the agent, and the agent's replies to it
    (None: no such message of this party, by the provenance row: a person's own conversation is never
    read over A2A)."""
    row = db.conn.execute("SELECT n.topic, pr.actor_id, pr.label FROM notes n JOIN provenance pr ON pr.container_did ="
                          " n.container_did WHERE n.container_did = ? AND pr.kind = 'a2a' AND n.agent_did = ?",
                          (did, own_did)).fetchone()
    if row is None or not _party_of(row[1], row[2], party):
        return None
    return {"thread": chat.thread_name(did, row[0]) or "", "replies": chat.replies_to(db, own_did, did)}


def task_of(request: dict, replies: list[dict] | None) -> Task:
    """The A2A task of a held message (``replies``: the agent's replies once it was delivered); built
    by ``tasks`` (a2a-sdk's types), the only part of this module that needs a2a-sdk."""
    from meshnode.faces.a2a.tasks import held_task

    return held_task(request, task_id(request), replies)
