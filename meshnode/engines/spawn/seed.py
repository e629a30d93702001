"""Seeding a child's store from its parent's database file, as ``kinds.KIND_RULES`` says.

The source is opened read-only (the parent may be running: a WAL reader sees one snapshot and does
not stop its writer). Every container is decoded and verified again, exactly as if it had come by
CogSync; one that fails is refused and counted with its reason, never dropped silently. The ones the
rules let through are stored by the child's own insert path (``Database.put_containers``), so the
notes, diary, concepts, links and goals are the child's own views of them. Local rows are copied by
the explicit columns of ``seed_rows``; nothing else of the parent's is read.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from meshnode.base.container import Container, ContainerError, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp.rules import GmpRefused
from meshnode.engines.spawn import kinds, seed_rows
from meshnode.engines.spawn.model import KINDS
from meshnode.base.errors import SpawnError
from meshnode.store.database import _STORED, Database, container_bytes

BATCH = 1000  # containers verified, then stored in one transaction
MAX_REASONS = 50  # the report keeps this many refusal sentences (the counts are complete)
READ_LOCAL = {"read": True}  # copied notes are history, not mail to the child's agent


@dataclass
class SeedReport:
    """What a seeding copied (per class and per table), refused (per reason code) and left out by
    rule (per class), with the first refusals in words."""

    kind: str
    copied: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    withheld: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def count(self, where: dict[str, int], key: str, n: int = 1) -> None:
        if n:
            where[key] = where.get(key, 0) + n

    def refuse(self, code: str, sentence: str) -> None:
        self.count(self.refused, code)
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(sentence)


def open_source(path: Path) -> sqlite3.Connection:
    """The parent's (or a bundle's) database, read-only; SpawnError seed_failed when it cannot be."""
    path = Path(path).resolve()
    if not path.is_file():
        raise SpawnError("seed_failed", f"no database to seed from at {path}")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("BEGIN")  # one snapshot for every read below
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise SpawnError("seed_failed", f"cannot read the parent's database {path}: {exc}") from None
    return conn


def seed_child_store(source: Path, child: Database, kind: str, *, parent_did: str, now_ms: int) -> SeedReport:
    """Copy into ``child`` (a migrated store) what a child of ``kind`` gets from the database at ``source``
    (the parent's, or a bundle's seed.db: the same rules give the same result). Every failure is a
    SpawnError (``seed_failed``, ``bad_kind``)."""
    return _seed(source, child, kind, parent_did=parent_did, now_ms=now_ms, keep_origin=False)


def _seed(source: Path, child: Database, kind: str, *, parent_did: str, now_ms: int, keep_origin: bool) -> SeedReport:
    if kind not in KINDS:
        raise SpawnError("bad_kind", f"kind must be one of {', '.join(KINDS)}")
    started = time.monotonic()
    report = SeedReport(kind)
    if kind != "newborn":
        src = open_source(source)
        try:
            copy_containers(src, child, kind, parent_did=parent_did, now_ms=now_ms, report=report,
                            keep_origin=keep_origin)
            seed_rows.copy_rows(src, child, kind, report)
        except sqlite3.Error as exc:
            raise SpawnError("seed_failed", f"reading the parent's database: {exc}") from None
        except SpawnError:
            raise
        except MeshnodeError as exc:
            raise SpawnError("seed_failed", f"writing the child's database: {exc.reason}") from None
        finally:
            src.close()
    report.seconds = round(time.monotonic() - started, 3)
    return report


def seed_bundle_store(source: Path, target: Path, kind: str, *, parent_did: str, now_ms: int) -> SeedReport:
    """A new database at ``target`` (migrated, no identity row) seeded as for a local child: a bundle's seed.db.
    Its containers keep the ``received_from`` the parent knew them by, so that seeding the child from
    it later (``seed_child_store``) applies the hop limits exactly as seeding from the parent would."""
    target = Path(target)
    if target.exists():
        raise SpawnError("seed_failed", f"{target} exists; a bundle's database is always new")
    db = Database(target)
    try:
        return _seed(source, db, kind, parent_did=parent_did, now_ms=now_ms, keep_origin=True)
    finally:
        db.close()


def copy_containers(src: sqlite3.Connection, child: Database, kind: str, *, parent_did: str, now_ms: int,
                    report: SeedReport, keep_origin: bool = False) -> None:
    """Verify, filter and store the parent's containers in the parent's order (its rowid): a GMP
    container the parent admitted after the ones it names arrives after them here too. Each is
    stored as received from the parent, or (``keep_origin``) from whom the parent had it."""
    cur = src.execute("SELECT c.did, c.class, c.class_version, c.core, c.side, c.received_from, n.audience"
                      " FROM containers c LEFT JOIN notes n ON n.container_did = c.did ORDER BY c.rowid")
    while rows := cur.fetchmany(BATCH):
        chosen: list[tuple[str, Container, str | None]] = []
        for did, cls, version, core, side, received_from, seen_audience in rows:
            if _certainly_never(kind, cls, version, seen_audience):
                report.count(report.withheld, kinds.class_key(cls, version, seen_audience) or cls)
                continue
            try:
                c = decode_container(container_bytes(core, side), now_ms=now_ms, limits=_STORED)
                if c.did != did:
                    raise ContainerError("did_mismatch", f"stored under {did[:60]} but signed as {c.did[:60]}")
            except ContainerError as exc:
                report.refuse(exc.code, f"{cls} {did[:64]}: {exc.code}: {exc.reason}")
                continue
            key = kinds.class_key(c.cls, c.head.get("class_version"), _audience(c))
            rule = "never" if key is None else getattr(kinds.CLASSES[key], kind)
            if rule == "copy" or (rule == "shared" and friend_may_get(c, parent_did, received_from)):
                chosen.append((key, c, received_from))
            else:
                report.count(report.withheld, key or f"{c.cls} {c.head.get('class_version')}")
        origins = [frm for _, _, frm in chosen] if keep_origin else None
        outcomes = child.put_containers([c for _, c, _ in chosen], received_at_ms=now_ms, received_from=parent_did,
                                        local=READ_LOCAL, batch=len(chosen) or 1, origins=origins)
        for (key, c, _), outcome in zip(chosen, outcomes):
            if isinstance(outcome, GmpRefused):
                report.refuse(outcome.code, f"{c.cls} {c.did[:64]}: {outcome.code}: {outcome.reason}")
            else:
                report.count(report.copied, key)
    pending = child.conn.execute("SELECT count(*) FROM gmp_pending").fetchone()[0]
    if pending:  # the parent had admitted them; here what they name did not come (left out by rule)
        report.count(report.refused, "gmp_pending", pending)
        report.reasons.append(f"{pending} GMP containers wait for containers the child did not get")
    report.count(report.copied, "containers", child.conn.execute("SELECT count(*) FROM containers").fetchone()[0])


def _certainly_never(kind: str, cls: str, version: str, seen_audience: str | None) -> bool:
    """Rows the rules leave out whatever their payload says: not worth verifying. The parent's
    ``notes`` row tells a private note (leaving one out unverified is always safe; a note copied is
    judged by its verified payload)."""
    if cls == "note" and (kind != "clone" or seen_audience == "private"):
        return True
    key = kinds.class_key(cls, version, seen_audience)
    return key is not None and key != kinds.UNKNOWN_CLASS and getattr(kinds.CLASSES[key], kind) == "never"


def _audience(c: Container) -> str | None:
    return c.payload.get("audience") if type(c.payload) is dict else None


def friend_may_get(c: Container, parent_did: str, received_from: str | None) -> bool:
    """Whether the parent's sharing rule (``store.sharing.shareable``) gives ``c`` to a friend of the
    parent who is not among its recipients: the child."""
    payload = c.payload if type(c.payload) is dict else {}
    forward = payload.get("forward")
    if c.cls == "note":
        recipients = c.head.get("recipient") if isinstance(c.head.get("recipient"), list) else []
        if type(forward) is not int or forward < 1:
            return False
        return c.sender_did == parent_did or parent_did in recipients or (
            forward >= 2 and (received_from == c.sender_did or received_from in recipients))
    if type(forward) is not int:  # knowledge with no hop limit goes from every holder to its friends
        return True
    return c.sender_did == parent_did or (forward >= 1 and received_from == c.sender_did)
