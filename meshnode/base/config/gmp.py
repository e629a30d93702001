"""``[gmp]``: goals and tasks across the mesh (protocols/gmp.md sections 6 and 8; the reason for each
default is in README, Settings)."""

from __future__ import annotations

from typing import Any, Mapping

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {"offer_seconds": 3600.0, "receipt_seconds": 60.0, "dead_grace_seconds": 600.0,
                            "check_seconds": 30.0, "vote_seconds": 3600.0}
NOTE = ("goals and tasks across the mesh: how long an offer stays open, when an offer without a receipt"
        " is pushed again, how long an assignee may be dead before its task is offered again, and how"
        " often this node looks for such tasks, and how long the participants vote on a contested task's"
        " nominations before its delegator picks one (protocols/gmp.md sections 6 and 8)")
_RANGES = {  # in seconds: (lowest, highest)
    "offer_seconds": (10.0, 30 * 86400.0),
    "receipt_seconds": (0.5, 86400.0),
    "dead_grace_seconds": (0.0, 30 * 86400.0),
    "check_seconds": (0.1, 86400.0),
    "vote_seconds": (0.0, 30 * 86400.0),
}


def check(gmp: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _RANGES.items():
        if not lo <= gmp[key] <= hi:
            raise ConfigError("bad_config", f"gmp.{key} must be between {lo:g} and {hi:g} seconds")
    if gmp["receipt_seconds"] >= gmp["offer_seconds"]:
        raise ConfigError("bad_config", "gmp.receipt_seconds must be shorter than gmp.offer_seconds")
