"""The parsers of the commands in ``meshnode.faces.cli.config`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.config")


def add_parsers(sub, common) -> None:
    c = sub.add_parser("config", parents=[common], help="the node's settings: show, get, set (config.toml)",
                       description="The settings the node starts with: config.toml in the home, then"
                                   " MESHNODE_<SECTION>_<KEY> variables, then flags. The node reads them when it"
                                   " starts: a change reaches a running node when it restarts.")
    cs = c.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    p = cs.add_parser("show", parents=[common], help="every setting in effect and where it comes from",
                      epilog="example: meshnode config show net   (one section)   meshnode config show --changed")
    p.add_argument("section", nargs="?", help="only this section, e.g. net")
    p.add_argument("--changed", action="store_true", help="only the settings that are not at their default")
    p.add_argument("--json", action="store_true", help="machine-readable output: {section: {key: {value, from}}}")
    p.set_defaults(func=commands.cmd_show)
    p = cs.add_parser("get", parents=[common], help="one setting's value in effect",
                      epilog="example: meshnode config get net.listen")
    p.add_argument("name", metavar="SECTION.KEY", help="the setting, e.g. net.listen")
    p.add_argument("--json", action="store_true", help="the value as JSON")
    p.set_defaults(func=commands.cmd_get)
    p = cs.add_parser("set", parents=[common], help="change one setting in config.toml (checked as at start-up)",
                      epilog="examples: meshnode config set node.name alice\n"
                             "          meshnode config set net.listen /ip4/0.0.0.0/tcp/4101,/ip6/::/tcp/4101\n"
                             "          meshnode config set cognition.enabled false\n"
                             "A list is items separated by commas or a TOML array; a table is a TOML inline table.\n"
                             "The file keeps its comments; a value start-up would refuse is refused, file unchanged.")
    p.add_argument("name", metavar="SECTION.KEY", help="the setting, e.g. net.listen")
    p.add_argument("value", help="its new value, as text")
    p.set_defaults(func=commands.cmd_set)
