"""Family rows on both sides (stub: spawn-family owns it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from meshnode.store.database import Database


@dataclass
class ChildRecord:
    did: str
    peer_id: str
    name: str
    kind: str
    depth: int
    autostart: str
    home: str | None = None
    host: str = "local"
    listen_port: int | None = None
    web_port: int | None = None
    invitation_id: str | None = None
    addresses: list[str] = field(default_factory=list)
    seed_report: dict = field(default_factory=dict)


def record_child(db: Database, rec: ChildRecord, now_ms: int) -> None:
    raise NotImplementedError


def tie_parent(child_db: Database, *, parent_did: str, parent_peer_id: str, parent_name: str,
               addresses: list[str], kind: str, depth: int, now_ms: int,
               invitation_id: str | None = None, invitation: bytes | None = None,
               hello_state: str = "none") -> None:
    raise NotImplementedError


def children(db: Database, *, include_removed: bool = False) -> list[dict]:
    raise NotImplementedError


def child(db: Database, did_or_prefix: str) -> dict:
    raise NotImplementedError


def count_active(db: Database) -> int:
    raise NotImplementedError


def depth_of(db: Database) -> int:
    raise NotImplementedError


def origin(db: Database) -> dict | None:
    raise NotImplementedError


def mark_removed(db: Database, did: str, now_ms: int) -> None:
    raise NotImplementedError


def active_children(db: Database) -> list[str]:
    raise NotImplementedError
