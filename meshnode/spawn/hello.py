"""The child's spawn_hello sender (stub: spawn-bundle owns it)."""

from __future__ import annotations

import trio

from meshnode.container.timefmt import now_ms


class HelloSender:
    def __init__(self, store, mesh, key, metrics, clock=now_ms):
        raise NotImplementedError

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        raise NotImplementedError
