"""The node's SQLite database: one file, WAL, and durable commits.

Used only from worker threads (see :mod:`meshnode.store.service`); a
:class:`Database` object wraps one connection and must be used by one thread
at a time. ``synchronous=FULL`` in WAL mode makes every commit durable when
it returns, which is what "an acknowledged write is durable" needs.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import cbor2

from meshnode.base.container import Container, Limits, cbor, decode_container, parse_ms
from meshnode.base.container.model import DEFAULT_LIMITS
from meshnode.base.errors import AdmissionRefused, StoreError
from meshnode.store import lineage, provenance, views
from meshnode.store.hooks import DEFAULT as DEFAULT_HOOKS
from meshnode.store.hooks import StoreHooks
from meshnode.store.migrate import migrate, schema_version

BUSY_TIMEOUT_MS = 10_000
MAX_NOTES_PAGE = 10_000


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, its ``%``, ``_`` and ``\\`` taken literally
    (use with ``ESCAPE '\\'``)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


@contextmanager
def sql_errors(action: str) -> Iterator[None]:
    """Turn sqlite3's exceptions into StoreError, with a reason a person can act on."""
    try:
        yield
    except sqlite3.Error as exc:
        text = str(exc)
        if "locked" in text or "busy" in text:
            raise StoreError("db_busy", f"{action}: the database is busy (another process holds it): {text}") from None
        if "full" in text:
            raise StoreError("db_full", f"{action}: the disk or database is full: {text}") from None
        raise StoreError("db_error", f"{action}: {text}") from None


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. Changing the journal mode does not wait for another process's
    lock (SQLite answers BUSY at once), so a node opening a new database while
    another process migrates it retries for a while instead of failing."""
    delay = 0.01
    for _ in range(12):  # about 10 s in all, the same as the busy timeout
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
        time.sleep(delay)  # a retry interval in a worker thread, not a synchronization
        delay = min(delay * 2, 2.0)
    conn.execute("PRAGMA journal_mode=WAL")


class Database:
    """``hooks``: the admission and views of the classes a domain package owns (``store.hooks``);
    the process default (``store.hooks.DEFAULT``) unless given. Without hooks for every class that
    needs them it opens and reads, but stores no container (StoreError ``no_store_hooks``)."""

    def __init__(self, path: Path, *, create: bool = True, do_migrate: bool = True, hooks: StoreHooks | None = None):
        self.hooks = DEFAULT_HOOKS if hooks is None else hooks
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError("no_database", f"no database at {self.path}; run `meshnode init` first")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                        timeout=BUSY_TIMEOUT_MS / 1000)
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _use_wal(self.conn)
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
        except (sqlite3.Error, OSError, ValueError) as exc:
            raise StoreError("cannot_open", f"cannot open the database {self.path}: {exc}") from None
        with sql_errors("migrating the database"):
            self.version = migrate(self.conn) if do_migrate else schema_version(self.conn)
        if do_migrate and lineage.missing(self.conn):  # a database from before the lineage index (0006)
            self.rebuild_views()

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self, busy_timeout_ms: int | None = None) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; the commit is durable when this block exits.

        On any failure (the block's, or COMMIT's own) the transaction is rolled
        back if SQLite has not already done so, and the first error is the one
        raised; sqlite3 errors arrive as StoreError. ``busy_timeout_ms`` waits
        for another process's lock for that long instead of the default.
        """
        conn = self.conn
        with sql_errors("writing to the database"):
            if busy_timeout_ms is not None:
                conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            finally:
                if busy_timeout_ms is not None:
                    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    # --- containers -----------------------------------------------------

    def put_container(self, c: Container, *, received_at_ms: int, received_from: str | None = None,
                      local: dict | None = None) -> bool:
        """Store a verified container and its table views; False if it was already here, or if its
        class's admission (``store.hooks``: GMP) held it aside pending. A container refused at
        admission raises ``AdmissionRefused`` (GMP: ``gmp.rules.GmpRefused``) and nothing is stored."""
        with self.transaction() as conn:
            return _insert(conn, c, received_at_ms, received_from, local, self.hooks)

    def put_container_in(self, conn: sqlite3.Connection, c: Container, *, received_at_ms: int,
                         received_from: str | None = None, local: dict | None = None) -> bool:
        """``put_container`` inside a transaction the caller holds (``conn`` from ``transaction()``),
        so the caller's own writes commit with the container or not at all."""
        return _insert(conn, c, received_at_ms, received_from, local, self.hooks)

    def put_containers(self, containers: Iterable[Container], *, received_at_ms: int, received_from: str | None = None,
                       local: dict | None = None, batch: int = 1000,
                       origins: Sequence[str | None] | None = None) -> list[bool | AdmissionRefused]:
        """Store many verified containers, ``batch`` to a transaction (a seeded child's store: far
        fewer commits than ``put_container`` each). Per container, in order: True stored, False
        already here or held pending (GMP: released when what it waits for arrives later in the same
        call, so give them in their author's order), or the ``AdmissionRefused`` that refused it (nothing
        of it stored, the others are). One with admission hooks runs in a savepoint, so a refusal undoes
        only its own writes;
        any other error (StoreError) rolls back the batch it is in and stops.
        ``origins``, when given, is each container's own ``received_from`` (instead of one for all)."""
        out: list[bool | AdmissionRefused] = []
        items = list(containers)
        froms = list(origins) if origins is not None else [received_from] * len(items)
        if len(froms) != len(items):
            raise ValueError("origins must name one sender per container")
        for start in range(0, len(items), max(1, batch)):
            with self.transaction() as conn:
                for c, frm in zip(items[start:start + max(1, batch)], froms[start:start + max(1, batch)]):
                    if self.hooks.of(c) is None:  # only a class's admission refuses; anything else fails the batch
                        out.append(_insert(conn, c, received_at_ms, frm, local, self.hooks))
                        continue
                    conn.execute("SAVEPOINT put_one")
                    try:
                        out.append(_insert(conn, c, received_at_ms, frm, local, self.hooks))
                    except AdmissionRefused as exc:
                        conn.execute("ROLLBACK TO put_one")
                        out.append(exc)
                    conn.execute("RELEASE put_one")
        return out

    def shrink_memory(self) -> None:
        """Free this connection's page cache (it refills on use): after a burst of writes."""
        with sql_errors("freeing the page cache"):
            self.conn.execute("PRAGMA shrink_memory")

    def get_container_bytes(self, did: str, with_side: bool = True) -> bytes | None:
        with sql_errors("reading a container"):
            row = self.conn.execute("SELECT core, side FROM containers WHERE did = ?", (did,)).fetchone()
        if row is None:
            return None
        core, side = row
        return container_bytes(core, side if with_side else None)

    def load_container(self, did: str, *, now_ms: int) -> Container | None:
        """Read a container back and verify it again (stored bytes are never trusted blindly)."""
        data = self.get_container_bytes(did)
        return None if data is None else decode_container(data, now_ms=now_ms, limits=_STORED)

    def rebuild_views(self) -> int:
        """Re-derive every agent-table row from the containers; returns how many were applied."""
        self.hooks.check()
        n = 0
        with self.transaction() as conn:
            for own in self.hooks:
                own.clear(conn)
            for (core,) in conn.execute("SELECT core FROM containers WHERE known_class = 1 ORDER BY rowid").fetchall():
                views.materialize(conn, decode_container(core, now_ms=2**62, limits=_STORED), self.hooks)
                n += 1
            for own in self.hooks:
                own.rebuilt(conn)
        return n

    def recent_notes(self, limit: int, *, before: str | None = None, query: str | None = None,
                     unread: bool | None = None, source: str | None = None, topic: str | None = None) -> list[dict]:
        """The newest notes with their author (DID, and name when this node knows one), newest first.

        ``before``: the container DID of the last note of the previous page (the next page starts
        after it, ties on time broken by row id); ``query``: text or topic contains it (LIKE,
        case-insensitive for ASCII, ``%`` and ``_`` taken literally); ``unread``: only unread (True)
        or only read (False) notes; ``source``, ``topic``: exactly these. Every filter narrows a
        walk down the time index, so a page costs the rows it skips, not the table."""
        where, params = ["n.hidden = 0"], []
        with sql_errors("reading notes"):
            if before is not None:
                row = self.conn.execute("SELECT timestamp, id FROM notes WHERE container_did = ?",
                                        (before,)).fetchone()
                if row is None:
                    raise StoreError("bad_before", f"before: no note {str(before)[:80]} on this node"
                                                   " (give the container DID of the last note of a page)")
                where.append("(n.timestamp, n.id) < (?, ?)")  # a range of the time index (row ids break ties)
                params += [row[0], row[1]]
            if query:
                where.append("(n.text LIKE ? ESCAPE '\\' OR n.topic LIKE ? ESCAPE '\\')")
                params += [like_pattern(query)] * 2
            if unread is not None:
                where.append("n.read = 0" if unread else "n.read = 1")  # literal: the partial index needs it
            if source is not None:
                where.append("n.source = ?")
                params.append(source)
            if topic is not None:
                where.append("n.topic = ?")
                params.append(topic)
            cur = self.conn.execute(
                "SELECT n.timestamp, n.topic, n.text, n.audience, n.tags, n.container_did, n.source,"
                " n.agent_did AS author_did, COALESCE(i.name, p.name) AS author_name, n.read,"
                # who asked (store.provenance); a note with no record here is its author's, a peer
                " COALESCE(pr.kind, CASE WHEN i.id IS NULL THEN 'peer' END) AS asked_kind, pr.via AS asked_via,"
                " pr.label AS asked_label, pr.actor_id AS asked_id, pr.approved_kind, pr.approved_via FROM notes n"
                " LEFT JOIN identity i ON i.id = n.agent_did LEFT JOIN agent_peers p ON p.id = n.agent_did"
                " LEFT JOIN provenance pr ON pr.container_did = n.container_did"
                f" WHERE {' AND '.join(where)} ORDER BY n.timestamp DESC, n.id DESC LIMIT ?",
                (*params, max(1, min(int(limit), MAX_NOTES_PAGE))))
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, row)) for row in cur.fetchall()]
        for r in rows:
            r["tags"] = json.loads(r["tags"]) if r["tags"] else []
            r["read"] = bool(r["read"])
        return rows

    def counts(self) -> dict[str, int]:
        q = self.conn.execute
        with sql_errors("counting"):
            by_class = dict(q("SELECT class, count(*) FROM containers GROUP BY class").fetchall())
            notes = q("SELECT count(*) FROM notes").fetchone()[0]
        return {"containers": sum(by_class.values()), "notes": notes,
                **{f"class:{k}": v for k, v in sorted(by_class.items())}}


def container_bytes(core: bytes, side: bytes | None) -> bytes:
    """A stored container's bytes as it travels: its core block, with its side blocks when it has any."""
    if side is None:
        return core
    return cbor.encode({**cbor2.loads(core), **cbor2.loads(side)})


# Stored containers were checked at arrival within the node's limits; re-reading
# them must not fail because a limit was lowered later or the clock moved.
_STORED = Limits(max_bytes=64 * 1024 * 1024, max_depth=256, max_items=64 * 1024 * 1024, clock_skew_ms=2**62)
assert DEFAULT_LIMITS.max_bytes <= _STORED.max_bytes


def _insert(conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None,
            local: dict | None, hooks: StoreHooks) -> bool:
    """Store ``c`` and its rows; False if it was here already or its admission held it aside.

    A container of a class with hooks (GMP 1.1) passes its admission first: it may be held
    aside pending, or refused with an ``AdmissionRefused`` (the caller's transaction rolls back).
    Every container stored is then shown to every hook (GMP releases what waited for it)."""
    hooks.check()
    if conn.execute("SELECT 1 FROM containers WHERE did = ?", (c.did,)).fetchone() is not None:
        return False
    own = hooks.of(c)
    if own is not None and not own.admit(conn, c, received_at_ms, received_from):
        return False
    if not _store(conn, c, received_at_ms, received_from, local, hooks):
        return False

    def store_released(cn: sqlite3.Connection, released: Container, at: int, frm: str | None) -> bool:
        return _store(cn, released, at, frm, None, hooks)

    for each in hooks:
        each.stored(conn, c, store_released)
    return True


def _store(conn: sqlite3.Connection, c: Container, received_at_ms: int, received_from: str | None,
           local: dict | None, hooks: StoreHooks) -> bool:
    head = c.head
    expires = parse_ms(head["ttl"], "ttl") if "ttl" in head else None
    cur = conn.execute(
        "INSERT INTO containers (did, class, class_version, sender_did, timestamp_ms, expires_ms,"
        " known_class, core, side, received_at_ms, received_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (did) DO NOTHING",
        (c.did, c.cls, head["class_version"], c.sender_did, c.timestamp_ms, expires, int(c.known_class),
         c.core_bytes(), cbor.encode(c.side) if c.side else None, received_at_ms, received_from),
    )
    if cur.rowcount == 0:
        return False
    if local and local.get("asked_by"):  # who asked this node to write it: in the same transaction
        provenance.record(conn, c.did, local["asked_by"], received_at_ms, local.get("approved_by"))
    conn.executemany(
        "INSERT OR IGNORE INTO container_links (source_did, relation, target_did) VALUES (?, ?, ?)",
        [(c.did, rel, target) for rel, targets in c.related.items() for target in targets],
    )
    recipients = head.get("recipient")
    if isinstance(recipients, list):
        conn.executemany("INSERT OR IGNORE INTO container_recipients (did, recipient) VALUES (?, ?)",
                         [(c.did, r) for r in recipients if isinstance(r, str)])
    # CogSync knowledge (the versioned classes) may limit its hops (sharing.py)
    forward = c.payload.get("forward") if c.cls in lineage.VERSIONED and type(c.payload) is dict else None
    if type(forward) is int:  # a known class version allows 0 or 1; anything else is read as the nearest
        conn.execute("INSERT OR IGNORE INTO container_forward (did, forward) VALUES (?, ?)",
                     (c.did, min(max(forward, 0), 1)))
    views.materialize(conn, c, hooks, local)
    return True
