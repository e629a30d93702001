"""The parsers of the commands in ``meshnode.faces.cli.a2a`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.a2a")


def add_parsers(sub, common) -> None:
    a = sub.add_parser("a2a", parents=[common], help="other agents (A2A): the tokens of known parties",
                       description="Known parties of the A2A face send Authorization: Bearer TOKEN; everyone"
                                   " else is unknown (rate-limited, their messages wait for your approval).")
    tokens = a.add_subparsers(dest="a2a_command", metavar="SUBCOMMAND", required=True)
    t = tokens.add_parser("token", parents=[common], help="add, list or remove a known party's token")
    ts = t.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    p = ts.add_parser("add", parents=[common], help="issue a token for a party (printed once)")
    p.add_argument("name", help="the party's name, as the agent will see it")
    p.set_defaults(func=commands.cmd_token_add)
    p = ts.add_parser("list", parents=[common], help="the names of the known parties")
    p.set_defaults(func=commands.cmd_token_list)
    p = ts.add_parser("remove", parents=[common], help="withdraw a party's token")
    p.add_argument("name", help="the party whose token goes (its requests are an unknown party's from then on)")
    p.set_defaults(func=commands.cmd_token_remove)
