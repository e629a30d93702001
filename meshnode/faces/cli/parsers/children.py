"""The parsers of the commands in ``meshnode.faces.cli.children`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.children")


_CHILD = "the child: its DID, the key:... short id `children list` shows, a unique prefix, or its name"


def add_parsers(sub, common) -> None:
    c = sub.add_parser("children", parents=[common], help="the child nodes this node spawned: list, show, start,"
                       " stop, remove").add_subparsers(dest="children_command", required=True, metavar="SUBCOMMAND")
    p = c.add_parser("list", parents=[common], help="children: short id, name, kind, depth, host, state, liveness,"
                     " last heard", epilog="liveness is what this node last heard (unknown: never heard)")
    p.add_argument("--all", action="store_true", help="removed children too")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_list)
    p = c.add_parser("show", parents=[common], help="one child in full: home, ports, addresses, seed report")
    p.add_argument("did", metavar="CHILD", help=_CHILD)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_show)
    for name, helptext in (("start", "start a local child (its unit, its start.sh, or directly)"),
                           ("stop", "stop a local child")):
        p = c.add_parser(name, parents=[common], help=helptext)
        p.add_argument("did", metavar="CHILD", help=_CHILD)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=commands.cmd_start if name == "start" else commands.cmd_stop)
    p = c.add_parser("remove", parents=[common], help="the child leaves the family: marked removed, no longer a"
                     " friend; its home is kept unless --delete-home")
    p.add_argument("did", metavar="CHILD", help=_CHILD)
    p.add_argument("--delete-home", action="store_true",
                   help="also stop it and delete its home (a local child's, holding its own config and key)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_remove)
