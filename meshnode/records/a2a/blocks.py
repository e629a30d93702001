"""The person's blocks at the A2A face (migration 0023): a party by name, or an address or network.
A blocked party's or address's requests are refused (HTTP 403) and its held messages rejected when
the block is made. Functions run in the store's threads."""

from __future__ import annotations

from meshnode.base.errors import MeshnodeError
from meshnode.records.a2a import held_queue
from meshnode.records.a2a.addresses import network_of, within
from meshnode.store.database import Database

MAX_BLOCKS = 10_000
MAX_TARGET_CHARS = 200


def target_of(text: str) -> tuple[str, str]:
    """``(kind, target)`` of what a person typed: ``("address", "192.0.2.7/32")`` for an address or a
    network, else ``("party", name)`` (a known party's name, a claimed sender or a party's key)."""
    if not isinstance(text, str) or not text.strip():
        raise MeshnodeError("bad_arguments", "name the party or the address to block")
    text = text.strip()
    if len(text) > MAX_TARGET_CHARS or not text.isprintable():
        raise MeshnodeError("bad_arguments", f"a party or an address is at most {MAX_TARGET_CHARS} printable"
                                             " characters")
    net = network_of(text)
    return ("address", str(net)) if net is not None else ("party", text)


def block(db: Database, text: str, now_ms: int, by: str) -> dict:
    """Block ``text`` (a party or an address/network); its held messages waiting are rejected.
    ``{target, kind, created_ms, decided_by, rejected}`` (the ids rejected)."""
    kind, target = target_of(text)
    with db.transaction() as conn:
        if conn.execute("SELECT COUNT(*) FROM a2a_blocks").fetchone()[0] >= MAX_BLOCKS and conn.execute(
                "SELECT 1 FROM a2a_blocks WHERE target = ?", (target,)).fetchone() is None:
            raise MeshnodeError("too_many", f"{MAX_BLOCKS} blocks are kept at most: unblock some first")
        conn.execute("INSERT INTO a2a_blocks (target, kind, created_ms, decided_by) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (target) DO NOTHING", (target, kind, now_ms, by))
    rejected = held_queue.reject(db, now_ms, by, **({"address": target} if kind == "address" else {"party": target}))
    return {"target": target, "kind": kind, "created_ms": now_ms, "decided_by": by, "rejected": rejected}


def unblock(db: Database, text: str) -> bool:
    """Lift the block of ``text`` (as ``block`` was given it); False: there was none."""
    _, target = target_of(text)
    with db.transaction() as conn:
        return conn.execute("DELETE FROM a2a_blocks WHERE target = ?", (target,)).rowcount == 1


def listing(db: Database) -> list[dict]:
    rows = db.conn.execute("SELECT target, kind, created_ms, decided_by FROM a2a_blocks ORDER BY created_ms,"
                           " target").fetchall()
    return [dict(zip(("target", "kind", "created_ms", "decided_by"), r)) for r in rows]


def blocked(db: Database, names: tuple[str, ...], client: str) -> str | None:
    """The block that applies to a request of the party known by any of ``names`` (its name, its key)
    from ``client`` (None: none does)."""
    marks = ",".join("?" * len(names))
    found = db.conn.execute(f"SELECT target FROM a2a_blocks WHERE kind = 'party' AND target IN ({marks}) LIMIT 1",
                            names).fetchone() if names else None
    if found:
        return found[0]
    for (target,) in db.conn.execute("SELECT target FROM a2a_blocks WHERE kind = 'address'"):
        net = network_of(target)
        if net is not None and within(client, net):
            return target
    return None
