"""The running node's log level, changed while it runs (``meshnode log-level``).

For this run only: the next start logs at ``[log] level`` again (config.toml, or ``meshnode config
set log.level`` to keep a level). The person's alone: the agent and parties never change it.
"""

from __future__ import annotations

from meshnode.app.actor import Actor, allow
from meshnode.app.context import App
from meshnode.base import node_log
from meshnode.base.errors import MeshnodeError


async def log_level(app: App, actor: Actor, level: str | None = None) -> dict:
    """Set the running node's log level (``level``: debug, info, warning or error), or (None) say
    which it is. ``{"level", "was", "persisted": False}``."""
    allow(actor, ("person",), "changing the log level")
    app.network("the log level")  # the running node's: the CLI's own process has nothing to change
    if level is None:
        return {"level": node_log.level(), "was": node_log.level(), "persisted": False}
    if not isinstance(level, str) or level.lower() not in node_log.LEVELS:
        raise MeshnodeError("bad_level", f"a log level is one of {', '.join(node_log.LEVELS)}, not {str(level)[:20]!r}")
    was = node_log.set_level(level.lower())
    return {"level": node_log.level(), "was": was, "persisted": False}
