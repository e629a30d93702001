"""``[sync]``: what this node takes from peers when it reconciles (classes, tags, how far back, from
whom), and whether it takes goals anyone may see."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {"classes": [], "tags": [], "window_days": 0.0, "min_trust": 0.0, "public_goals": False}
NOTE = ("what this node takes from peers: classes, tags (any of), days back (0: all), minimum peer trust;"
        " public_goals: also take goals (and their tasks) that anyone may see")


def check(sync: dict) -> None:
    for key in ("classes", "tags"):
        if not all(isinstance(item, str) and 0 < len(item) <= 64 for item in sync[key]) or len(sync[key]) > 64:
            raise ConfigError("bad_config", f"sync.{key} must be a list of at most 64 short names")
    if not 0 <= sync["window_days"] <= 36500:
        raise ConfigError("bad_config", "sync.window_days must be between 0 (no limit) and 36500")
    if not 0 <= sync["min_trust"] <= 1:
        raise ConfigError("bad_config", "sync.min_trust must be between 0 and 1")
