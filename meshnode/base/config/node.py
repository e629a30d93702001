"""``[node]``, ``[keys]``, ``[store]`` and ``[log]``: who the node is, its key file, its database
and how much it logs (the files are relative to the home)."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

NODE: dict[str, Any] = {"name": "meshnode"}
KEYS: dict[str, Any] = {"path": "keys/node.key"}
STORE: dict[str, Any] = {"path": "data/meshnode.db"}
LOG: dict[str, Any] = {"level": "info", "file_kib": 10240, "files": 5}
NODE_NOTE = "who this node is"
KEYS_NOTE = "the key file (mode 0600; never commit it)"
STORE_NOTE = "the SQLite database"
LOG_NOTE = ("level: debug, info, warning or error (`meshnode log-level` changes it while the node runs);"
            " logs/node.log turns into node.log.1 at file_kib, the newest `files` old ones are kept")
LOG_LEVELS = ("debug", "info", "warning", "error")


def check_log(log: dict) -> None:
    if log["level"] not in LOG_LEVELS:
        raise ConfigError("bad_config", f"log.level must be one of {', '.join(LOG_LEVELS)}")
    if not 16 <= log["file_kib"] <= 1024 * 1024:
        raise ConfigError("bad_config", "log.file_kib must be between 16 and 1048576 (1 GiB)")
    if not 1 <= log["files"] <= 100:
        raise ConfigError("bad_config", "log.files must be between 1 and 100")


def check_name(name: str) -> None:
    """A node's display name: 1 to 64 printable characters."""
    if not name.strip() or len(name) > 64 or not name.isprintable():
        raise ConfigError("bad_config", "node.name must be 1 to 64 printable characters")
