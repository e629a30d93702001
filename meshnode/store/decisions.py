"""MeshConsensus decisions and emergency decisions in the store.

A height decides a block of values: ``consensus_decisions`` holds one row per value with
its index in the block, and the height's signed precommits on the row of index 0.
Emergency decisions are per height and hold the provisional block."""

from __future__ import annotations

import hashlib
import json

import cbor2

from meshnode.domain.consensus import blocks
from meshnode.base.container import cbor
from meshnode.store.database import Database, sql_errors


NO_PRECOMMITS = cbor.encode([])


def save_decision(db: Database, committee: str, height: int, values: tuple[bytes, ...] | list[bytes], round_: int,
                  precommits: list[bytes], now_ms: int) -> None:
    """The values of a decided block, in one transaction (the precommits once, with index 0)."""
    first = cbor.encode(list(precommits))
    with db.transaction() as conn:
        conn.executemany("INSERT OR IGNORE INTO consensus_decisions (committee, height, idx, value, round, precommits,"
                         " decided_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [(committee, height, i, v, round_, first if i == 0 else NO_PRECOMMITS, now_ms)
                          for i, v in enumerate(values)])


def save_emergency(db: Database, committee: str, height: int, block: bytes, now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO consensus_emergency (committee, height, value, decided_at_ms)"
                     " VALUES (?, ?, ?, ?)", (committee, height, block, now_ms))


def revisit(db: Database, committee: str, height: int, confirmed: bool) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE consensus_emergency SET revisited = ? WHERE committee = ? AND height = ?",
                     ("confirmed" if confirmed else "overturned", committee, height))


def next_height(db: Database) -> int:
    """The first height this node has not decided (decisions are made in order; heights go on
    across committee epochs)."""
    with sql_errors("reading decisions"):
        row = db.conn.execute("SELECT max(height) FROM consensus_decisions").fetchone()
    return 0 if row[0] is None else row[0] + 1


def recent_decisions(db: Database, committee: str, limit: int = 64) -> list[tuple[int, bytes, int, list[bytes]]]:
    """(height, block, round, encoded precommits) of ``committee``'s newest decided heights,
    oldest first: what a restarted node still answers nodes catching up with."""
    with sql_errors("reading decisions"):
        rows = db.conn.execute(
            "SELECT height, idx, value, round, precommits FROM consensus_decisions WHERE committee = ? AND height IN"
            " (SELECT DISTINCT height FROM consensus_decisions WHERE committee = ? ORDER BY height DESC LIMIT ?)"
            " ORDER BY height, idx", (committee, committee, int(limit))).fetchall()
    by_height: dict[int, list] = {}
    for height, idx, value, round_, raw in rows:
        by_height.setdefault(height, []).append((idx, value, round_, raw))
    out = []
    for height, held in by_height.items():
        if [idx for idx, *_ in held] != list(range(len(held))):
            continue  # a height with a value missing: no block to answer with
        precommits = cbor2.loads(held[0][3])
        if type(precommits) is list and all(type(p) is bytes for p in precommits):
            out.append((height, blocks.encode_block([v for _, v, _, _ in held]), held[0][2], precommits))
    return out


def height_of(db: Database, value: bytes) -> int | None:
    """The height at which ``value`` was decided, or None."""
    place = place_of(db, value)
    return None if place is None else place[0]


def place_of(db: Database, value: bytes) -> tuple[int, int] | None:
    """(height, index in that height's block) at which ``value`` was decided, or None."""
    with sql_errors("reading decisions"):
        row = db.conn.execute("SELECT height, idx FROM consensus_decisions WHERE value = ? ORDER BY height LIMIT 1",
                              (value,)).fetchone()
    return None if row is None else (row[0], row[1])


def block_of(db: Database, committee: str, height: int) -> tuple[list[bytes], int, list[bytes]] | None:
    """(values in block order, round, encoded precommits) of a decided height; None if unknown."""
    with sql_errors("reading decisions"):
        rows = db.conn.execute("SELECT idx, value, round, precommits FROM consensus_decisions WHERE committee = ?"
                               " AND height = ? ORDER BY idx", (committee, height)).fetchall()
    if not rows or [r[0] for r in rows] != list(range(len(rows))):
        return None
    return [r[1] for r in rows], rows[0][2], cbor2.loads(rows[0][3])


def decided_value_ids(db: Database) -> set[bytes]:
    """SHA-256 of every value decided (a value is decided once)."""
    with sql_errors("reading decisions"):
        rows = db.conn.execute("SELECT value FROM consensus_decisions").fetchall()
    return {hashlib.sha256(v).digest() for (v,) in rows}


def save_epoch(db: Database, epoch: int, committee: str, weights: dict[str, int], from_height: int,
               now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO consensus_epochs (epoch, committee, weights, from_height, decided_at_ms)"
                     " VALUES (?, ?, ?, ?, ?)", (epoch, committee, json.dumps(weights, sort_keys=True),
                                                 from_height, now_ms))


def latest_epoch(db: Database) -> tuple[int, dict[str, int]] | None:
    """(epoch, weights) of the newest committee this node switched to; None: the genesis one."""
    with sql_errors("reading epochs"):
        row = db.conn.execute("SELECT epoch, weights FROM consensus_epochs ORDER BY epoch DESC LIMIT 1").fetchone()
    return None if row is None else (row[0], json.loads(row[1]))


def held_statements(db: Database, dids: list[str], *, now_ms: int) -> list | None:
    """The trust containers named, verified again from the store; None if any is missing."""
    out = []
    for did in dids:
        c = db.load_container(did, now_ms=now_ms)
        if c is None:
            return None
        out.append(c)
    return out


def newest_member_statements(db: Database, members: set[str]) -> list[str]:
    """DIDs of the newest trust statement of each member about each subject: what a committee
    value for the next epoch lists."""
    with sql_errors("reading trust statements"):
        rows = db.conn.execute("SELECT did, sender_did, timestamp_ms, core FROM containers WHERE class = 'trust'"
                               " ORDER BY timestamp_ms, did").fetchall()
    newest: dict[tuple[str, str], str] = {}
    for did, sender, _, core in rows:
        if sender in members:
            payload = cbor2.loads(core)["hmp_container"].get("payload")  # stored bytes were verified on arrival
            if type(payload) is dict and type(payload.get("agent_did")) is str:
                newest[(sender, payload["agent_did"])] = did  # rows come oldest first
    return sorted(newest.values())


def decisions(db: Database, limit: int = 50) -> list[dict]:
    """Committed decisions and provisional (emergency) ones still unsettled, newest height first.
    Every entry has the same keys: ``round`` is None and ``emergency`` names the provisional value
    for an emergency entry; ``emergency`` is None for a decision made without one."""
    limit = max(1, min(int(limit), 10_000))
    with sql_errors("reading decisions"):
        rows = db.conn.execute(
            "SELECT d.committee, d.height, d.idx, d.value, d.round, d.decided_at_ms, e.value, e.revisited"
            " FROM consensus_decisions d LEFT JOIN consensus_emergency e"
            " ON e.committee = d.committee AND e.height = d.height"
            " ORDER BY d.height DESC, d.idx DESC LIMIT ?", (limit,)).fetchall()
        pending = db.conn.execute(
            "SELECT committee, height, value, decided_at_ms FROM consensus_emergency WHERE revisited IS NULL"
            " ORDER BY height DESC, decided_at_ms DESC LIMIT ?", (limit,)).fetchall()
    out = [{"committee": c, "height": h, "index": i, "value": _text(v), "round": r, "decided_at_ms": t,
            "status": "committed", "emergency": None if ev is None else {"value": _block_text(ev), "revisited": rev}}
           for c, h, i, v, r, t, ev, rev in rows]
    for c, h, block, t in pending:  # each value of the provisional block, like a decided one
        out += [{"committee": c, "height": h, "index": i, "value": _text(v), "round": None, "decided_at_ms": t,
                 "status": "emergency_consensus", "emergency": {"value": _text(v), "revisited": None}}
                for i, v in enumerate(_block_values(block))]
    out.sort(key=lambda r: (r["height"], r["index"]), reverse=True)
    return out[:limit]


def _block_values(block: bytes) -> tuple[bytes, ...]:
    """The values of a provisional block as stored (one value, if stored before blocks)."""
    try:
        return blocks.decode_block(block, blocks.MAX_BLOCK_BYTES)
    except blocks.BlockError:
        return (block,)


def _block_text(block: bytes) -> str:
    return " | ".join(_text(v) for v in _block_values(block))


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + value.hex()
