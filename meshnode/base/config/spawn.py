"""``[spawn]``: child nodes (protocols/spawn.md; the reason for each default is in README, Spawn)."""

from __future__ import annotations

from typing import Any, Mapping

from meshnode.base.errors import ConfigError

SPAWN_AUTOSTARTS = ("systemd-user", "systemd-system", "script", "none")
DEFAULTS: dict[str, Any] = {"autostart": "none", "wait_seconds": 30.0, "invitation_hours": 24.0, "max_children": 16,
                            "max_depth": 3}
NOTE = ("child nodes (meshnode spawn): autostart systemd-user, systemd-system, script or none; how long"
        " --start waits for the child to be reachable; how long a bundle's invitation stays valid; at most"
        " max_children active children, and a family at most max_depth generations deep")
_RANGES = {"wait_seconds": (1.0, 600.0), "invitation_hours": (0.01, 168.0), "max_children": (0, 1000),
           "max_depth": (1, 16)}


def check(spawn: Mapping[str, Any]) -> None:
    if spawn["autostart"] not in SPAWN_AUTOSTARTS:
        raise ConfigError("bad_config", f"spawn.autostart must be one of {', '.join(SPAWN_AUTOSTARTS)}")
    for key, (lo, hi) in _RANGES.items():
        if not lo <= spawn[key] <= hi:
            raise ConfigError("bad_config", f"spawn.{key} must be between {lo:g} and {hi:g}")
