"""The parsers of the commands in ``meshnode.faces.cli.a2a`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.a2a")


def add_parsers(sub, common) -> None:
    a = sub.add_parser("a2a", parents=[common], help="other agents (A2A): known parties' tokens, held messages,"
                       " blocks", description="Known parties of the A2A face send Authorization: Bearer TOKEN;"
                       " everyone else is unknown (rate-limited, their messages wait for your approval:"
                       " `meshnode a2a held`, `confirm approve N`, `a2a reject`). A wrong or withdrawn token gets"
                       " HTTP 401; a blocked party or address HTTP 403.")
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

    p = tokens.add_parser("held", parents=[common], help="the unknown parties' messages waiting for your approval"
                          " (approve one with `meshnode confirm approve N`)")
    p.add_argument("--limit", type=int, default=200, help="at most this many (oldest first)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_held)
    p = tokens.add_parser("reject", parents=[common], help="reject held messages: all, a party's or an address's")
    p.add_argument("--all", action="store_true", help="every held message")
    p.add_argument("--party", help="a party's: its key or the sender it claims, as `a2a held` shows them")
    p.add_argument("--address", help="from an address or network (192.0.2.7, 203.0.113.0/24)")
    p.set_defaults(func=commands.cmd_reject)
    p = tokens.add_parser("block", parents=[common], help="refuse a party's or an address's requests (HTTP 403);"
                          " its held messages are rejected")
    p.add_argument("target", help="a party (a known party's name, a claimed sender, a party's key) or an address"
                                  " or network")
    p.set_defaults(func=commands.cmd_block)
    p = tokens.add_parser("unblock", parents=[common], help="lift a block")
    p.add_argument("target", help="as it was blocked, or as `a2a blocks` lists it")
    p.set_defaults(func=commands.cmd_unblock)
    p = tokens.add_parser("blocks", parents=[common], help="the parties and addresses blocked")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_blocks)
