"""The command line's grammar: the parsers of each command group, one module per group.

Building the whole parser is what every ``meshnode`` call does first (``--version`` too),
so these modules load argparse and nothing heavy: each command names its function
(``commands.cmd_x``, a ``Command``), whose module is imported only when that command runs.
"""

# every group's parsers, read as ``parsers.<group>`` by the builder (meshnode/faces/cli/__init__.py: its own
# names ``meshnode.faces.cli.<group>`` are the groups' command modules, bound there when a command runs)
from meshnode.faces.cli.parsers import (a2a, chat, children, config, consensus, ethics, gate, gmp, inbox,  # noqa: E402
                                  knowledge, lifecycle, llm, mcp, mind, names, reactor, reputation, spawn, web)

__all__ = ["a2a", "chat", "children", "config", "consensus", "ethics", "gate", "gmp", "inbox", "knowledge", "lifecycle",
           "llm", "mcp", "mind", "names", "reactor", "reputation", "spawn", "web"]
