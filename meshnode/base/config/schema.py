"""Every section of config.toml: its defaults, its note in the file, and the checks run at load.

Each section's own module (``config/<section>.py``) holds its defaults, its note and its checks; this
module lists the sections in the file's order and runs the checks in one order, so an error names the
first bad setting. ``[mcp]``'s note lives with the server settings (config/mcp.py), read only when a
config.toml is written: a command that only loads the config does not need them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from meshnode.base.config import (a2a, cognition, consensus, gate, gmp, limits, net, node, peers, reactor, spawn, sync,
                             web)

DEFAULTS: dict[str, dict[str, Any]] = {
    "node": node.NODE, "keys": node.KEYS, "store": node.STORE, "limits": limits.DEFAULTS, "log": node.LOG,
    "net": net.DEFAULTS, "sync": sync.DEFAULTS, "gmp": gmp.DEFAULTS, "consensus": consensus.DEFAULTS,
    "gate": gate.DEFAULTS, "cognition": cognition.DEFAULTS,
    "reactor": reactor.SECTION_DEFAULTS,  # its sub-tables are [reactor.NAME] tables of their own
    "peers": peers.DEFAULTS, "web": dict(web.WEB_DEFAULTS), "a2a": dict(a2a.A2A_DEFAULTS), "mcp": {"servers": {}},
    "spawn": spawn.DEFAULTS,
}
_NOTES = {
    "node": node.NODE_NOTE, "keys": node.KEYS_NOTE, "store": node.STORE_NOTE, "limits": limits.NOTE,
    "log": node.LOG_NOTE, "net": net.NOTE, "sync": sync.NOTE, "gmp": gmp.NOTE, "consensus": consensus.NOTE,
    "gate": gate.NOTE, "cognition": cognition.NOTE, "reactor": reactor.NOTE, "peers": peers.NOTE,
    "web": web.WEB_NOTES, "a2a": a2a.A2A_NOTES, "spawn": spawn.NOTE,
}
TABLES = {"reactor": reactor.TABLES}  # keys written as [section.key] tables though their default is not a table
# (section, key) -> why an item of that list is wrong (checked as the value is read, naming the item)
ITEM_CHECKS: dict[tuple[str, str], Callable[[str], str | None]] = {
    **{("net", key): check for key, check in net.ITEM_CHECKS.items()},
    **{("consensus", key): check for key, check in consensus.ITEM_CHECKS.items()},
}


def section_note(section: str) -> str:
    if section == "mcp":  # [mcp.servers.NAME]: the agent's outside tools (their module is not needed to load)
        from meshnode.base.config.mcp import MCP_NOTES

        return MCP_NOTES
    return _NOTES[section]


def check(values: dict, home: Path) -> None:
    """Every section's ranges and cross-checks, once its values are read and type-checked."""
    limits.check(values["limits"])
    node.check_log(values["log"])
    node.check_name(values["node"]["name"])
    net.check(values["net"])
    sync.check(values["sync"])
    gmp.check(values["gmp"])
    consensus.check(values["consensus"])
    cognition.check(values["cognition"])
    gate.check(values["gate"])
    peers.check(values["peers"])
    reactor.check_reactor(values["reactor"])
    spawn.check(values["spawn"])
    web.check_web(values["web"], home)
    a2a.a2a_settings(values)
