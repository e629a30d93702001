"""The one object web handlers use: the node's own objects and the three ways to act on them.

A handler never touches the database connection nor builds containers itself: a change is either
``call`` (a control command, through ``_Control.handle``: same checks, metrics and error codes as the
CLI) or ``write`` of a module function the CLI also calls.
"""

from __future__ import annotations

from typing import Any, Callable

import trio

from meshnode.app.actor import Actor, person
from meshnode.base.container import now_ms
from meshnode.net.control import HANDLER_TIMEOUT
from meshnode.base.errors import MeshnodeError


class Services:
    def __init__(self, config, key, store, mesh, metrics, control, cycle=None, gmp=None, reactor=None):
        from meshnode.faces.web.sse import Feed  # the feed's module imports Services' users, not the reverse

        self.config, self.key, self.store, self.mesh, self.metrics = config, key, store, mesh, metrics
        self.control, self.cycle, self.gmp, self.reactor = control, cycle, gmp, reactor
        self.feed = Feed(self)

    def now(self) -> int:
        return now_ms()

    async def call(self, cmd: str, /, *, actor: Actor = person("web"), **args) -> Any:
        """A control command, as the CLI sends it over the socket (timeout included), for ``actor``:
        the person through the web unless the face that calls says otherwise (/mcp, A2A)."""
        try:
            with trio.fail_after(HANDLER_TIMEOUT):
                result = await self.control.handle(cmd, args, actor=actor)
        except trio.TooSlowError:
            raise MeshnodeError("timeout", f"{cmd} took longer than {HANDLER_TIMEOUT:g} s") from None
        return result  # the app nudges the feed after every POST

    async def read(self, fn: Callable, *a, **kw) -> Any:
        return await self.store.read(fn, *a, **kw)

    async def write(self, fn: Callable, *a, **kw) -> Any:
        result = await self.store.write(fn, *a, **kw)
        self.feed.nudge()
        return result
