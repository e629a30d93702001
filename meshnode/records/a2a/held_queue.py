"""The held queue: unknown parties' messages waiting for a person's approval, kept as gate
confirmation requests (session ``a2a``, tool ``a2a_message``; their args name the party, its claimed
sender and its address). Fair by construction: at most ``Shares.per_party`` of one party,
``per_address`` from one host, ``per_subnet`` from one /24 or /48 and ``total`` of everyone wait at
once, so a flood from one network fills its own share and leaves the rest of the queue to others.

The person's side: ``listing`` (``meshnode a2a held``), ``reject`` (``a2a reject --all|--party|
--address``). A rejection, one or many, is told to the agent as ``confirm reject`` tells it (a
``gate:`` row of context 4 with the ids, never a party's text), and the reactor's notices about the
rejected messages (its notes to the person, which the agent reads in context 6c) are marked read once
nothing they name still waits: the agent never reads a rejected message as waiting. Functions run in
the store's threads; the time is an argument.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from meshnode.base.errors import MeshnodeError
from meshnode.records.a2a.addresses import host_of, network_of, subnet_of, within
from meshnode.store.database import Database

SESSION = "a2a"  # the gate_confirmations session of held messages (the agent's own is "core")
TOOL = "a2a_message"
MIN_RETRY_MS = 60_000
MAX_LISTED = 1000
TOLD_IDS = 50  # of the ids rejected, how many the agent's row names (the count is whole)


@dataclass(frozen=True)
class Shares:
    total: int
    per_party: int
    per_address: int
    per_subnet: int
    retry_after_ms: int  # the longest wait a refusal names


@dataclass(frozen=True)
class Refusal:
    share: str  # "party", "address", "subnet" or "queue": which one is full
    retry_after_ms: int

    @property
    def reason(self) -> str:
        minutes = max(1, round(self.retry_after_ms / 60_000))
        whose = {"party": "this party", "address": "this address", "subnet": "this address's network",
                 "queue": "unknown parties"}[self.share]
        return (f"held_full: as many messages of {whose} as may wait for a person's approval wait already;"
                f" try again in {minutes} minute{'s' if minutes != 1 else ''}")


def waiting(db: Database, now_ms: int) -> list[dict]:
    """The held messages waiting now, oldest first: ``{id, party, sender, client, created_ms, expires_ms}``."""
    rows = db.conn.execute("SELECT id, args, created_ms, expires_ms FROM gate_confirmations WHERE session = ? AND"
                           " tool = ? AND status = 'pending' AND expires_ms > ? ORDER BY id",
                           (SESSION, TOOL, now_ms)).fetchall()
    out = []
    for id_, args, created, expires in rows:
        a = json.loads(args)
        out.append({"id": id_, "party": a.get("party", ""), "sender": a.get("sender", ""),
                    "client": a.get("client", ""), "created_ms": created, "expires_ms": expires})
    return out


def refusal(db: Database, party_key: str, client: str, now_ms: int, shares: Shares) -> Refusal | None:
    """Why one more message of ``party_key`` from ``client`` may not wait now (None: it may). The
    wait a refusal names is until the oldest message of the full share expires, at most
    ``shares.retry_after_ms`` (a person may clear the queue sooner) and at least a minute."""
    rows = waiting(db, now_ms)
    host, subnet = host_of(client), subnet_of(client)
    for share, limit, mine in (
            ("party", shares.per_party, [r for r in rows if r["party"] == party_key]),
            ("address", shares.per_address, [r for r in rows if host_of(r["client"]) == host]),
            ("subnet", shares.per_subnet, [r for r in rows if subnet_of(r["client"]) == subnet]),
            ("queue", shares.total, rows)):
        if len(mine) >= limit:
            first = min(r["expires_ms"] for r in mine)
            wait = min(shares.retry_after_ms, max(MIN_RETRY_MS, first - now_ms))
            return Refusal(share, wait)
    return None


def listing(db: Database, now_ms: int, limit: int = 200) -> list[dict]:
    """The held messages waiting, oldest first, as a person reads them: who (party, claimed sender,
    address and its subnet), the message as the agent would read it, when it came and expires."""
    rows = db.conn.execute("SELECT id, args, created_ms, expires_ms FROM gate_confirmations WHERE session = ? AND"
                           " tool = ? AND status = 'pending' AND expires_ms > ? ORDER BY id LIMIT ?",
                           (SESSION, TOOL, now_ms, max(1, min(int(limit), MAX_LISTED)))).fetchall()
    out = []
    for id_, args, created, expires in rows:
        a = json.loads(args)
        out.append({"id": id_, "party": a.get("party", ""), "sender": a.get("sender", ""),
                    "client": a.get("client", ""), "subnet": subnet_of(a.get("client", "")),
                    "context_id": a.get("context_id", ""), "text": a.get("framed", ""),
                    "created_ms": created, "expires_ms": expires})
    return out


def matching(rows: list[dict], party: str | None = None, address: str | None = None) -> list[dict]:
    """The rows of ``party`` (its key, or the sender it claims) and from ``address`` (an address or a
    network); both None: all of them."""
    net = None
    if address is not None:
        net = network_of(address)
        if net is None:
            raise MeshnodeError("bad_arguments", f"{address[:100]!r} is not an IP address or network")
    return [r for r in rows if (party is None or party in (r["party"], r["sender"]))
            and (net is None or within(r["client"], net))]


def reject(db: Database, now_ms: int, by: str, party: str | None = None, address: str | None = None) -> list[int]:
    """Reject the held messages waiting of ``party`` and/or from ``address`` (both None: every one), as
    a person's decision (``by``: their face); their parties' tasks turn REJECTED. The ids rejected."""
    with db.transaction() as conn:
        rows = [{"id": i, **json.loads(a)} for i, a in conn.execute(
            "SELECT id, args FROM gate_confirmations WHERE session = ? AND tool = ? AND status = 'pending' AND"
            " expires_ms > ?", (SESSION, TOOL, now_ms)).fetchall()]
        for r in rows:
            r.setdefault("party", ""), r.setdefault("sender", ""), r.setdefault("client", "")
        ids = [r["id"] for r in matching(rows, party, address)]
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            conn.execute(f"UPDATE gate_confirmations SET status = 'rejected', decided_ms = ?, decided_by = ? WHERE"
                         f" id IN ({','.join('?' * len(chunk))})", (now_ms, by, *chunk))
        if ids:
            tell_agent(conn, "a2a reject", {"tool": TOOL, "status": "rejected", "count": len(ids),
                                            "ids": ids[:TOLD_IDS]}, by)
            settle_notices(conn, ids)
    return ids


def tell_agent(conn: sqlite3.Connection, what: str, result: dict, by: str) -> None:
    """The ``gate:<what>`` row the agent's context 4 shows (records.gate.person's, in the caller's
    transaction): what the person decided, by ids and counts."""
    conn.execute("INSERT INTO process_log (name, value, tags) VALUES (?, ?, ?)",
                 (f"gate:{what}", json.dumps(result)[:4000], json.dumps(["gate", "person", by])))


def settle_notices(conn: sqlite3.Connection, ids: list[int]) -> int:
    """The reactor's notes to the person about the held messages ``ids`` (escalations of the events
    ``confirm:<id>``), marked read when every event each names is decided: how many. The agent reads
    this node's unread notes (context 6c); a notice of a message rejected must not read as waiting."""
    keys = [f"confirm:{i}" for i in ids]
    notes: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start:start + 500]
        notes.update(r[0] for r in conn.execute(
            f"SELECT container_id FROM reactor_escalations WHERE event_key IN ({','.join('?' * len(chunk))})"
            " AND to_id = 'operator' AND container_id IS NOT NULL", chunk))
    settled = 0
    for did in sorted(notes):
        named = [r[0] for r in conn.execute("SELECT event_key FROM reactor_escalations WHERE container_id = ?", (did,))]
        waiting = [k for k in named if not k.startswith("confirm:") or not k[8:].isdigit() or conn.execute(
            "SELECT 1 FROM gate_confirmations WHERE id = ? AND status = 'pending'", (int(k[8:]),)).fetchone()]
        if not waiting:
            settled += conn.execute("UPDATE notes SET read = 1 WHERE container_did = ? AND read = 0", (did,)).rowcount
    return settled
