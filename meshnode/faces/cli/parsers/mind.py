"""The parsers of the commands in ``meshnode.faces.cli.mind`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import HELD_LIMIT

commands = Commands("meshnode.faces.cli.mind")


def add_parsers(sub, common) -> None:
    m = sub.add_parser("mind", parents=[common], help="the cognitive core: state, validators, held commands",
                       description="The cognitive core's state: its mode, the commands the validation reflex"
                                   " held, each validator's weight and why. Subcommands act on held commands.")
    m.add_argument("--json", action="store_true", help="machine-readable output")
    m.set_defaults(func=commands.cmd_mind)
    ms = m.add_subparsers(dest="mind_command", metavar="SUBCOMMAND")
    p = ms.add_parser("held", parents=[common], help="commands held by the validation reflex",
                      description="Commands whose answer the validators rejected or gave no verdict on,"
                                  " newest first, with why they are held.")
    p.add_argument("--all", action="store_true", help="also those already released, dropped, run or expired")
    p.add_argument("--limit", type=int, default=HELD_LIMIT, help="at most this many (default %(default)s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_held)
    for name, helptext in (("release", "let held commands run (the node runs them now, or when it starts)"),
                           ("drop", "discard held commands")):
        p = ms.add_parser(name, parents=[common], help=helptext, description=helptext[0].upper() + helptext[1:]
                          + ". Example: meshnode mind " + name + " 3 4  (numbers from `meshnode mind held`)")
        p.add_argument("ids", nargs="*", type=int, metavar="ID", help="a held command's number")
        p.add_argument("--all", action="store_true", help="every held command")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=commands.cmd_decide, release=name == "release")
    for name, helptext in (("pause", "stop the agent: no tick until `meshnode mind resume` (kept across restarts)"),
                           ("resume", "let a paused agent think again")):
        p = ms.add_parser(name, parents=[common], help=helptext, description=helptext[0].upper() + helptext[1:] + ".")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=commands.cmd_pause, pause=name == "pause")
    p = ms.add_parser("ticks", parents=[common], help="the last ticks, or one tick in full",
                      description="The last ticks (newest first): mode, LLM, its answer time, the summary. With a"
                                  " tick number: what that tick showed the LLM (context by context), its answer,"
                                  " the commands it ran and those it held.")
    p.add_argument("tick", nargs="?", type=int, metavar="TICK", help="a tick number (from the listing)")
    p.add_argument("--limit", type=int, default=20, help="at most this many ticks (default %(default)s)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_ticks)
