"""The reactor's configuration as a person reviews it: the rules with this node's changes, and the
alias registry. One description for ``meshnode reactor rules|aliases`` and the web notebook's
reactor page."""

from __future__ import annotations

from pathlib import Path

from meshnode.base.config import Config, check_reactor
from meshnode.base.errors import MeshnodeError
from meshnode.engines.reactor.aliases import AliasError, AliasRegistry
from meshnode.engines.reactor.limits import rules_table


def describe(cfg: Config) -> list[dict]:
    """One dict per rule: ``rule``, ``events`` (the event types it takes), ``route``, ``nudge``,
    ``wakes``, ``off`` (turned off by [reactor]) and ``rerouted`` (event type -> route)."""
    return rules_table(check_reactor(cfg.values["reactor"]))


def aliases(home: Path, self_did: str) -> list[dict]:
    """The alias registry (``reactor/aliases.toml``): one dict per agent, ``agent``, ``self``,
    ``aliases``. A file that cannot be used is a MeshnodeError("bad_aliases") naming why."""
    try:
        registry = AliasRegistry.load(Path(home) / "reactor" / "aliases.toml", self_id=self_did)
    except AliasError as exc:
        raise MeshnodeError("bad_aliases", exc.reason) from None
    return [{"agent": a, "self": a == self_did, "aliases": list(registry.aliases_of(a))}
            for a in registry.canonical_ids()]
