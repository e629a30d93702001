"""The built-in signal adapters: the node's own tables read as reactor Events (design 3).

``scan`` runs every DB adapter in one read (run it with ``store.read``); each query is a range
scan on an index and bounded by a LIMIT. ``liveness_events`` is pure (the hour-scale tracker's
changes). Adapters remember nothing: the dedupe keys make repeated sightings harmless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshnode.net.liveness import Change
    from meshnode.reactor.aliases import AliasRegistry
    from meshnode.reactor.settings import ReactorConfig
    from meshnode.reactor.types import Event
    from meshnode.store.database import Database


def scan(db: Database, now_ms: int, cfg: ReactorConfig, *, self_did: str,
         liveness: dict[str, str] | None = None, aliases: AliasRegistry | None = None) -> list[Event]:
    raise NotImplementedError


def liveness_events(changes: list[Change], now_ms: int, cfg: ReactorConfig) -> list[Event]:
    raise NotImplementedError
