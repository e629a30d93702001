"""A bundle for a child on another host, and init from it (stub: spawn-bundle owns it)."""

from __future__ import annotations

from pathlib import Path

from meshnode.config import Config
from meshnode.identity.keys import NodeKey
from meshnode.spawn.model import SpawnRequest, SpawnResult
from meshnode.spawn.parent import ParentSide


def write_bundle(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, *, now_ms: int) -> SpawnResult:
    raise NotImplementedError


def init_from_bundle(bundle: Path, home: Path, *, name: str | None = None, autostart: str = "none",
                     start: bool = False, now_ms: int) -> dict:
    raise NotImplementedError
