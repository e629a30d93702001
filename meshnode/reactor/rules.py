"""The reactor's rules as this node's configuration changes them, for ``meshnode reactor rules``
and the web notebook's reactor page (one description, two front ends)."""

from __future__ import annotations

from meshnode.config import Config, check_reactor
from meshnode.reactor.limits import rules_table


def describe(cfg: Config) -> list[dict]:
    """One dict per rule: ``rule``, ``events`` (the event types it takes), ``route``, ``nudge``,
    ``wakes``, ``off`` (turned off by [reactor]) and ``rerouted`` (event type -> route)."""
    return rules_table(check_reactor(cfg.values["reactor"]))
