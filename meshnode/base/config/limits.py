"""``[limits]``: what a container may be (size, nesting, data items, clock skew; protocols/container.md),
and what unknown authors and peers may make this node hold (store/quotas.py, net/author_rate.py; the
reasons for each default are in protocols/mesh.md "Storage quotas")."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

STRANGER_LIMITS: dict[str, Any] = {
    "known_min_trust": 0.7,
    "unknown_author_containers": 64,
    "unknown_author_kib": 1024,
    "unknown_total_containers": 16384,
    "unknown_total_mib": 64,
    "unknown_pool_containers": 1024,
    "unknown_pool_mib": 8,
    "unknown_writes_per_second": 1.0,
    "unknown_writes_burst": 10,
    "unknown_gossip_per_second": 0.2,
    "unknown_gossip_burst": 32,
    "unknown_gossip_total_per_second": 10.0,
    "unknown_gossip_total_burst": 50,
    "unknown_peers": 2000,
}
DEFAULTS: dict[str, Any] = {"max_container_bytes": 256 * 1024, "max_depth": 32, "max_items": 16384,
                            "clock_skew_seconds": 300, **STRANGER_LIMITS}
NOTE = ("what a container may be: size, nesting, data items, clock skew (see protocols/container.md);"
        " what unknown authors may make this node store and relay, and how many unknown peers it"
        " remembers (protocols/mesh.md, Storage quotas)")


def check(limits: dict) -> None:
    # the ceiling bounds the worst case of one decode (many tiny maps cost ~85x their size in memory)
    if not 1024 <= limits["max_container_bytes"] <= 16 * 1024 * 1024:
        raise ConfigError("bad_config", "limits.max_container_bytes must be between 1 KiB and 16 MiB")
    if not 4 <= limits["max_depth"] <= 256:
        raise ConfigError("bad_config", "limits.max_depth must be between 4 and 256")
    # the item count bounds the decode cost whatever the size (about 1 us per item, worst shape)
    if not 1024 <= limits["max_items"] <= 1024 * 1024:
        raise ConfigError("bad_config", "limits.max_items must be between 1024 and 1048576")
    if not 0 <= limits["clock_skew_seconds"] <= 86400:
        raise ConfigError("bad_config", "limits.clock_skew_seconds must be between 0 and 86400")
    _check_stranger_limits(limits)


_STRANGER_RANGES = {  # setting: (lowest, highest)
    "known_min_trust": (0.0, 1.0),
    "unknown_author_containers": (1, 1_000_000),
    "unknown_author_kib": (1, 1024 * 1024),
    "unknown_total_containers": (1, 100_000_000),
    "unknown_total_mib": (1, 1024 * 1024),
    "unknown_pool_containers": (1, 100_000_000),
    "unknown_pool_mib": (1, 1024 * 1024),
    "unknown_writes_per_second": (0.001, 100_000.0),
    "unknown_writes_burst": (1, 1_000_000),
    "unknown_gossip_per_second": (0.001, 10_000.0),
    "unknown_gossip_burst": (1, 1_000_000),
    "unknown_gossip_total_per_second": (0.001, 100_000.0),
    "unknown_gossip_total_burst": (1, 1_000_000),
    "unknown_peers": (10, 10_000_000),
}


def _check_stranger_limits(limits: dict) -> None:
    for key, (low, high) in _STRANGER_RANGES.items():
        if not low <= limits[key] <= high:
            raise ConfigError("bad_config", f"limits.{key} must be between {low:g} and {high:g}")
    if limits["unknown_author_containers"] > limits["unknown_total_containers"] \
            or limits["unknown_author_kib"] > limits["unknown_total_mib"] * 1024:
        raise ConfigError("bad_config", "limits.unknown_author_containers and unknown_author_kib must not exceed"
                          " limits.unknown_total_containers and unknown_total_mib")
