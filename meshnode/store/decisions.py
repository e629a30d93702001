"""MeshConsensus decisions and emergency decisions in the store."""

from __future__ import annotations

from meshnode.container import cbor
from meshnode.store.database import Database, sql_errors


def save_decision(db: Database, committee: str, height: int, value: bytes, round_: int,
                  precommits: list[bytes], now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO consensus_decisions (committee, height, value, round, precommits,"
                     " decided_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
                     (committee, height, value, round_, cbor.encode(list(precommits)), now_ms))


def save_emergency(db: Database, committee: str, height: int, value: bytes, now_ms: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT OR IGNORE INTO consensus_emergency (committee, height, value, decided_at_ms)"
                     " VALUES (?, ?, ?, ?)", (committee, height, value, now_ms))


def revisit(db: Database, committee: str, height: int, confirmed: bool) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE consensus_emergency SET revisited = ? WHERE committee = ? AND height = ?",
                     ("confirmed" if confirmed else "overturned", committee, height))


def next_height(db: Database, committee: str) -> int:
    """The first height this node has not decided (decisions are made in order)."""
    with sql_errors("reading decisions"):
        row = db.conn.execute("SELECT max(height) FROM consensus_decisions WHERE committee = ?",
                              (committee,)).fetchone()
    return 0 if row[0] is None else row[0] + 1


def decided_value_ids(db: Database, committee: str) -> set[bytes]:
    """SHA-256 of every value this committee decided (a value is decided once)."""
    import hashlib

    with sql_errors("reading decisions"):
        rows = db.conn.execute("SELECT value FROM consensus_decisions WHERE committee = ?", (committee,)).fetchall()
    return {hashlib.sha256(v).digest() for (v,) in rows}


def decisions(db: Database, limit: int = 50) -> list[dict]:
    with sql_errors("reading decisions"):
        rows = db.conn.execute(
            "SELECT d.committee, d.height, d.value, d.round, d.decided_at_ms, e.value, e.revisited"
            " FROM consensus_decisions d LEFT JOIN consensus_emergency e"
            " ON e.committee = d.committee AND e.height = d.height"
            " ORDER BY d.decided_at_ms DESC, d.height DESC LIMIT ?", (max(1, min(int(limit), 10_000)),)).fetchall()
        pending = db.conn.execute(
            "SELECT committee, height, value, decided_at_ms FROM consensus_emergency WHERE revisited IS NULL"
            " ORDER BY height").fetchall()
    out = [{"committee": c, "height": h, "value": _text(v), "round": r, "decided_at_ms": t, "status": "committed",
            "emergency": None if ev is None else {"value": _text(ev), "revisited": rev}}
           for c, h, v, r, t, ev, rev in rows]
    out += [{"committee": c, "height": h, "value": _text(v), "decided_at_ms": t, "status": "emergency_consensus"}
            for c, h, v, t in pending]
    return out


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + value.hex()
