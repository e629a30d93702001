"""Seeding a child's store from the parent's (stub: spawn-kinds owns it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from meshnode.store.database import Database


@dataclass
class SeedReport:
    kind: str
    copied: dict[str, int]
    refused: dict[str, int]
    reasons: list[str]

    def to_dict(self) -> dict:
        raise NotImplementedError


def seed_child_store(source: Path, child: Database, kind: str, *, parent_did: str, now_ms: int) -> SeedReport:
    raise NotImplementedError


def seed_bundle_store(source: Path, target: Path, kind: str, *, parent_did: str, now_ms: int) -> SeedReport:
    raise NotImplementedError
