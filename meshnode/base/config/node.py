"""``[node]``, ``[keys]``, ``[store]`` and ``[log]``: who the node is, its key file, its database
and how much it logs (the files are relative to the home)."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

NODE: dict[str, Any] = {"name": "meshnode"}
KEYS: dict[str, Any] = {"path": "keys/node.key"}
STORE: dict[str, Any] = {"path": "data/meshnode.db"}
LOG: dict[str, Any] = {"level": "info"}
NODE_NOTE = "who this node is"
KEYS_NOTE = "the key file (mode 0600; never commit it)"
STORE_NOTE = "the SQLite database"
LOG_NOTE = "debug, info, warning or error"
LOG_LEVELS = ("debug", "info", "warning", "error")


def check_log(log: dict) -> None:
    if log["level"] not in LOG_LEVELS:
        raise ConfigError("bad_config", f"log.level must be one of {', '.join(LOG_LEVELS)}")


def check_name(name: str) -> None:
    """A node's display name: 1 to 64 printable characters."""
    if not name.strip() or len(name) > 64 or not name.isprintable():
        raise ConfigError("bad_config", "node.name must be 1 to 64 printable characters")
