"""The parent's signed one-time invitation for a child on another host (stub: spawn-bundle owns it)."""

from __future__ import annotations

from meshnode.container import Container
from meshnode.identity.keys import NodeKey
from meshnode.store.database import Database

INVITATION_CLASS, HELLO_CLASS = "spawn_invitation", "spawn_hello"


def make_invitation(key: NodeKey, *, kind: str, name: str, depth: int, expires_ms: int,
                    bundle_hash: str, addresses: list[str], now_ms: int) -> Container:
    raise NotImplementedError


def record_invitation(db: Database, inv: Container, now_ms: int) -> None:
    raise NotImplementedError


def check_invitation(data: bytes, *, now_ms: int) -> Container:
    raise NotImplementedError


def make_hello(child_key: NodeKey, invitation: bytes, addresses: list[str], now_ms: int) -> Container:
    raise NotImplementedError


def accept_hello(db: Database, hello: Container, *, parent_did: str, now_ms: int) -> dict:
    raise NotImplementedError
