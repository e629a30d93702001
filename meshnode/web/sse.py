"""The event feed and /api/events (stub: web-feed replaces this module; protocols/web.md 5)."""

from __future__ import annotations

import trio

from meshnode.web.endpoint import Endpoint


class Feed:
    """Tails the database for new events; ``nudge`` asks for a poll soon."""

    def __init__(self, services):
        self.services = services
        self.streams = 0
        self.nudged = trio.Event()

    def nudge(self) -> None:
        self.nudged.set()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep_forever()


ROUTES: list[Endpoint] = []
