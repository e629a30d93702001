"""spawn_child: the steps of a spawn in order, each undone if a later one fails."""

from __future__ import annotations

from typing import Callable

from meshnode.config import Config
from meshnode.container.timefmt import now_ms as _now_ms
from meshnode.identity.keys import NodeKey
from meshnode.spawn.model import SpawnRequest, SpawnResult
from meshnode.spawn.parent import ParentSide


def spawn_child(config: Config, key: NodeKey, req: SpawnRequest, parent: ParentSide, *,
                now_ms: Callable[[], int] = _now_ms) -> SpawnResult:
    raise NotImplementedError
