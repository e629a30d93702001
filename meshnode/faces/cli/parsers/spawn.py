"""The parsers of the commands in ``meshnode.faces.cli.spawn`` (imported only when one runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import AUTOSTARTS, SPAWN_KINDS

commands = Commands("meshnode.faces.cli.spawn")


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("spawn",
                       help="make a child node: its own key, home, ports and a store seeded by its kind",
                       epilog="The parent's home goes before the command (meshnode --home PARENT spawn ...);\n"
                              "--home after it is the child's. Examples:\n"
                              "  meshnode spawn --kind newborn --start\n"
                              "  meshnode spawn --kind trained --bundle child.tgz   (for another host)")
    for action in common._actions:  # the common options but --home, which here names the child's home
        if action.option_strings and "--home" not in action.option_strings:
            p._add_action(action)
    p.add_argument("--kind", required=True, choices=SPAWN_KINDS,
                   help="clone: all the parent may share; trained: knowledge and known agents; newborn: nothing")
    p.add_argument("--name", help="the child's name: letters, digits, '.', '_', '-', unique among the active"
                   " children (default: <parent name>-<kind>-<n>)")
    p.add_argument("--friends", metavar="WHO", help="the child's friends besides its parent (default: the parent"
                   " only): 'inherit' (the parent's friends) and/or DIDs, comma separated")
    p.add_argument("--home", dest="child_home", type=Path, metavar="DIR",
                   help="the child's home (default: CCORE-<DID> beside the parent's home)")
    p.add_argument("--start", action="store_true", help="start the child and wait until it is reachable")
    p.add_argument("--autostart", choices=AUTOSTARTS, help="how the child starts with the host (default: [spawn] autostart)")
    p.add_argument("--bundle", type=Path, metavar="FILE", help="write a bundle for another host instead of a local child")
    p.add_argument("--expires", type=float, metavar="HOURS", help="the bundle's invitation lifetime (default: [spawn] invitation_hours)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_spawn)
