"""The parsers of the commands in ``meshnode.faces.cli.names`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.names")

_AGENT = "the agent: its DID (did:key:...), its petname, the name it announced, or its short id (key:...)"


def add_parsers(sub, common) -> None:
    name = sub.add_parser("name", parents=[common], help="petnames: what you call agents, on this node only",
                          epilog="example: meshnode name set key:AbCdEf12 alice   (then: meshnode friend add alice)")
    name = name.add_subparsers(dest="name_command", required=True, metavar="SUBCOMMAND")
    p = name.add_parser("set", parents=[common], help="give an agent a petname (it wins over the name it announced)")
    p.add_argument("agent", metavar="AGENT", help=_AGENT)
    p.add_argument("petname", metavar="PETNAME", help="1 to 32 characters, unique here, not like a DID or short id")
    p.set_defaults(func=commands.cmd_set)
    p = name.add_parser("unset", parents=[common], help="forget an agent's petname")
    p.add_argument("agent", metavar="AGENT", help=_AGENT)
    p.set_defaults(func=commands.cmd_unset)
    p = name.add_parser("list", parents=[common], help="every agent known here: name shown, petname, announced name")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_list)
