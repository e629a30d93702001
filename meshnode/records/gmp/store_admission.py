"""GMP admission inside the store: a DB-backed ``Held`` and the pending containers.

The store runs step 8 (``gmp.rules.admit``) on every GMP 1.1 container through the hooks of
``gmp.store_hooks`` (:func:`admit`), with a :class:`DbHeld` over what this node holds. A
container naming something not held yet is kept aside in ``gmp_pending`` (with one
``gmp_pending_missing`` row per DID it waits for) instead of ``containers``; whenever any
container is stored, the pending ones waiting for its DID are judged again in the same
transaction (:func:`released`), and those admitted release the ones waiting for them in turn
(a work list, not recursion: a chain may be long). Limits: :data:`MAX_PER_AUTHOR` pending
containers per author and :data:`MAX_AGE_MS`.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import cbor2

from meshnode.base.container import Container, Limits, cbor, decode_container
from meshnode.domain.gmp import contest, rules
from meshnode.store.hooks import StoreFn

log = logging.getLogger("meshnode.store")

MAX_PER_AUTHOR = 1024  # an author's pending set beyond this is a flood, not a gap in a history
MAX_AGE_MS = 7 * 86_400_000  # a named container not found in a week is not coming
# Authors cost nothing (a fresh key each): the pending set is also bounded per peer that sent it and
# in all, so a peer signing with ever new keys cannot grow it without bound.
MAX_PER_SENDER = 4 * MAX_PER_AUTHOR
MAX_PENDING = 64 * MAX_PER_AUTHOR

# stored containers were verified on arrival; re-reading them ignores limits and the clock
_STORED = Limits(max_bytes=64 * 1024 * 1024, max_depth=256, max_items=64 * 1024 * 1024, clock_skew_ms=2**62)


def decode_stored(core: bytes, side: bytes | None = None) -> Container:
    data = core if side is None else cbor.encode({**cbor2.loads(core), **cbor2.loads(side)})
    return decode_container(data, now_ms=2**62, limits=_STORED)


class DbHeld:
    """``gmp.rules.Held`` over ``containers`` (every stored container was admitted) and the
    lineage index ``container_versions``. Decoded containers are cached for the object's
    life: one object per write transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._cache: dict[str, Container | None] = {}

    def get(self, did: str) -> Container | None:
        if did not in self._cache:
            row = self.conn.execute("SELECT core FROM containers WHERE did = ?", (did,)).fetchone()
            self._cache[did] = decode_stored(row[0]) if row else None
        return self._cache[did]

    def root(self, did: str) -> str | None:
        row = self.conn.execute("SELECT root FROM container_versions WHERE did = ?", (did,)).fetchone()
        return row[0] if row else None

    def signed_in(self, root: str, signer: str) -> bool:
        """Whether ``signer`` signed a task 1.1 version of lineage ``root`` (or one not indexed yet):
        only then can it be a steward there (``gmp.view`` counting offers)."""
        return self.conn.execute(
            "SELECT 1 FROM containers c LEFT JOIN container_versions v ON v.did = c.did WHERE c.sender_did = ?"
            " AND c.class = 'task' AND c.class_version = '1.1' AND (v.root = ? OR v.root IS NULL) LIMIT 1",
            (signer, root)).fetchone() is not None

    def decided_through(self) -> int:
        """The first MeshConsensus height not decided here (decisions are stored in height order)."""
        row = self.conn.execute("SELECT max(height) FROM consensus_decisions").fetchone()
        return 0 if row[0] is None else row[0] + 1

    def delegation_decision(self, task: str, version: str):
        """The first gmp_delegation value decided for (task, version): (committee, height, index, nomination)."""
        return first_gmp_delegation(self.conn, task, version)

    def add(self, c: Container) -> None:
        """Make a container just stored in this transaction visible without reading it back."""
        self._cache[c.did] = c

    def forget(self, did: str) -> None:
        """A container whose storing was rolled back (to a savepoint) is not held after all."""
        self._cache.pop(did, None)


def first_gmp_delegation(conn, task: str, version: str) -> tuple[str, int, int, str] | None:
    """(committee, height, index, nomination) of the first value decided for GMP task ``task`` at
    ``version`` (gmp.md 6.3 step 3: the first binds, later ones are void); None if none is held."""
    rows = conn.execute(  # (the WHERE of index consensus_decisions_gmp_delegation, migration 0031)
        "SELECT committee, height, idx, value FROM consensus_decisions WHERE substr(value, 1, 24) ="
        f" CAST('{contest.VALUE_PREFIX.decode()}' AS BLOB) AND json_valid(CAST(value AS TEXT))"
        " AND json_extract(CAST(value AS TEXT), '$.task') = ? AND json_extract(CAST(value AS TEXT), '$.version') = ?"
        " ORDER BY height, idx", (task, version)).fetchall()
    for committee, height, idx, value in rows:
        try:
            parsed = contest.parse_delegation_value(bytes(value))
        except contest.BadValue:
            continue  # (decided values passed the validity rule: this does not happen)
        if parsed is not None and parsed["task"] == task and parsed["version"] == version:
            return committee, height, idx, parsed["nomination"]
    return None


def hold(conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None,
         missing: tuple[str, ...]) -> bool:
    """Keep ``c`` aside until ``missing`` arrive; False when its author has too many pending already."""
    here = conn.execute("SELECT 1 FROM gmp_pending WHERE did = ?", (c.did,)).fetchone() is not None
    if not here and conn.execute("SELECT count(*) FROM gmp_pending WHERE author = ?",
                                 (c.sender_did,)).fetchone()[0] >= MAX_PER_AUTHOR:
        log.info("GMP container %s not kept pending: its author %s has %d pending already", c.did, c.sender_did,
                 MAX_PER_AUTHOR)
        return False
    if not here and received_from is not None and conn.execute(
            "SELECT count(*) FROM gmp_pending WHERE received_from = ?", (received_from,)).fetchone()[0] >= MAX_PER_SENDER:
        log.info("GMP container %s not kept pending: %s sent %d pending already", c.did, received_from,
                 MAX_PER_SENDER)
        return False
    if not here and conn.execute("SELECT count(*) FROM gmp_pending").fetchone()[0] >= MAX_PENDING:
        log.info("GMP container %s not kept pending: %d pending already", c.did, MAX_PENDING)
        return False
    conn.execute(
        "INSERT INTO gmp_pending (did, core, side, author, received_from, received_at_ms, missing)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (did) DO UPDATE SET missing = excluded.missing",
        (c.did, c.core_bytes(), cbor.encode(c.side) if c.side else None, c.sender_did, received_from,
         received_at_ms, json.dumps(sorted(missing))))
    conn.execute("DELETE FROM gmp_pending_missing WHERE did = ?", (c.did,))
    conn.executemany("INSERT OR IGNORE INTO gmp_pending_missing (did, missing_did) VALUES (?, ?)",
                     [(c.did, m) for m in missing])
    return True


def admit(conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None) -> bool:
    """Step 8 for ``c`` before it is stored: True to store it, False when it is held aside pending;
    raises ``GmpRefused``. Old pending containers are swept first."""
    sweep(conn, received_at_ms)
    outcome = rules.admit(c, DbHeld(conn))
    if outcome.kind == "pending":
        hold(conn, c, received_at_ms, received_from, outcome.missing)
        return False
    outcome.raise_if_refused()
    conn.execute("DELETE FROM gmp_pending WHERE did = ?", (c.did,))  # it may have waited here before
    return True


def released(conn: sqlite3.Connection, c: Container, store: StoreFn) -> None:
    """After any container ``c`` was stored: the pending ones waiting for it are judged again."""
    if conn.execute("SELECT 1 FROM gmp_pending_missing WHERE missing_did = ? LIMIT 1", (c.did,)).fetchone():
        held = DbHeld(conn)
        held.add(c)
        release(conn, c.did, held, store)


def release(conn: sqlite3.Connection, did: str, held: DbHeld, store: StoreFn) -> list[tuple[str, str, str]]:
    """Judge again the pending containers waiting for ``did`` (just stored), and those waiting for
    each one admitted, and so on. ``store`` stores an admitted one (rows and views, no admission).
    Returns (DID, code, reason) of those now refused: they are dropped."""
    refused = []
    todo = [did]
    while todo:
        waited = todo.pop()
        rows = conn.execute(
            "SELECT p.did, p.core, p.side, p.received_from, p.received_at_ms FROM gmp_pending_missing m"
            " JOIN gmp_pending p ON p.did = m.did WHERE m.missing_did = ? ORDER BY p.received_at_ms, p.did",
            (waited,)).fetchall()
        for pdid, core, side, received_from, received_at_ms in rows:
            # each pending container in a savepoint: one that fails to store (a peer's odd payload) is
            # dropped, it must not roll back the container that released it, and so block that one forever
            conn.execute("SAVEPOINT gmp_release")
            try:
                c = decode_stored(core, side)
                outcome = rules.admit(c, held)
                if outcome.kind == "pending":
                    hold(conn, c, received_at_ms, received_from, outcome.missing)
                    conn.execute("RELEASE gmp_release")
                    continue
                conn.execute("DELETE FROM gmp_pending WHERE did = ?", (pdid,))
                if outcome.kind == "refused":
                    log.info("pending GMP container %s refused once %s arrived: %s: %s", pdid, waited,
                             outcome.code, outcome.reason)
                    refused.append((pdid, outcome.code or "", outcome.reason))
                elif conn.execute("SELECT 1 FROM containers WHERE did = ?", (pdid,)).fetchone() is None:
                    store(conn, c, received_at_ms, received_from)
                    held.add(c)
                    todo.append(pdid)
                conn.execute("RELEASE gmp_release")
            except Exception as exc:  # noqa: BLE001 - whatever it was, it concerns that container only
                conn.execute("ROLLBACK TO gmp_release")
                conn.execute("RELEASE gmp_release")
                held.forget(pdid)
                conn.execute("DELETE FROM gmp_pending WHERE did = ?", (pdid,))
                log.warning("pending GMP container %s dropped once %s arrived: %s: %s", pdid, waited,
                            type(exc).__name__, exc)
                refused.append((pdid, "gmp_unreadable", f"could not be stored: {type(exc).__name__}"))
    return refused


def release_commits(db) -> list[str]:
    """Judge again the pending containers that waited for a MeshConsensus height this node has decided
    since (``rules.commit_marker``: nothing to fetch, the node catches up by itself); the DIDs now
    admitted. One refused now is dropped (logged)."""
    from meshnode.base.errors import AdmissionRefused

    through = DbHeld(db.conn).decided_through()
    rows = db.conn.execute(
        "SELECT DISTINCT p.did, p.core, p.side, p.received_from, p.received_at_ms, m.missing_did FROM gmp_pending_missing m"
        " JOIN gmp_pending p ON p.did = m.did WHERE m.missing_did LIKE 'commit:%' ORDER BY p.received_at_ms, p.did"
    ).fetchall()
    admitted = []
    for did, core, side, received_from, received_at_ms, marker in rows:
        if not marker[7:].isdigit() or int(marker[7:]) >= through or did in admitted:
            continue
        c = decode_stored(core, side)
        try:
            if db.put_container(c, received_at_ms=received_at_ms, received_from=received_from):
                admitted.append(did)
        except AdmissionRefused as exc:
            log.info("pending GMP container %s refused once height %s was decided: %s: %s", did, marker[7:],
                     exc.code, exc.reason)
            with db.transaction() as conn:
                conn.execute("DELETE FROM gmp_pending WHERE did = ?", (did,))
    return admitted


def sweep(conn: sqlite3.Connection, now_ms: int) -> int:
    """Drop pending containers older than :data:`MAX_AGE_MS`; returns how many."""
    return conn.execute("DELETE FROM gmp_pending WHERE received_at_ms < ?", (now_ms - MAX_AGE_MS,)).rowcount


def prune_gmp_pending(db, now_ms: int) -> int:
    """Maintenance: drop the pending containers past their age (``db``: a store Database)."""
    with db.transaction() as conn:
        return sweep(conn, now_ms)


def gmp_pending_of(db, author: str | None = None) -> list[dict]:
    """The pending containers (all, or one author's): DID, author, who sent it, when, what it waits for."""
    sql = "SELECT did, author, received_from, received_at_ms, missing FROM gmp_pending"
    rows = db.conn.execute(sql + (" WHERE author = ?" if author else "") + " ORDER BY received_at_ms, did",
                           (author,) if author else ()).fetchall()
    return [{"did": d, "author": a, "received_from": f, "received_at_ms": t, "missing": json.loads(m)}
            for d, a, f, t, m in rows]


def missing_for_pending(db) -> list[str]:
    """DIDs the pending containers wait for that are neither held nor pending themselves: what to fetch
    (a MeshConsensus height waited for is no DID: nobody is asked for it)."""
    return [r[0] for r in db.conn.execute(
        "SELECT DISTINCT m.missing_did FROM gmp_pending_missing m"
        " WHERE m.missing_did NOT LIKE 'commit:%' AND m.missing_did NOT IN (SELECT did FROM containers)"
        " AND m.missing_did NOT IN (SELECT did FROM gmp_pending) ORDER BY m.missing_did")]


def missing_from(db) -> list[tuple[str, str | None]]:
    """(missing DID, peer that sent a container waiting for it): where to fetch each from."""
    return [tuple(r) for r in db.conn.execute(
        "SELECT m.missing_did, min(p.received_from) FROM gmp_pending_missing m JOIN gmp_pending p ON p.did = m.did"
        " WHERE m.missing_did NOT LIKE 'commit:%' AND m.missing_did NOT IN (SELECT did FROM containers)"
        " AND m.missing_did NOT IN (SELECT did FROM gmp_pending) GROUP BY m.missing_did ORDER BY m.missing_did")]
