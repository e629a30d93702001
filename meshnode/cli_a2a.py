"""``meshnode a2a token add|list|remove``: the bearer tokens of the known parties of the agent's A2A
face (protocols/a2a.md section 4). Works with the node stopped; a running node reads the file again
at the next request."""

from __future__ import annotations

from meshnode.cli_common import _config
from meshnode.errors import MeshnodeError


def add_parsers(sub, common) -> None:
    a = sub.add_parser("a2a", parents=[common], help="other agents (A2A): the tokens of known parties",
                       description="Known parties of the A2A face send Authorization: Bearer TOKEN; everyone"
                                   " else is unknown (rate-limited, their messages wait for your approval).")
    tokens = a.add_subparsers(dest="a2a_command", metavar="SUBCOMMAND", required=True)
    t = tokens.add_parser("token", parents=[common], help="add, list or remove a known party's token")
    ts = t.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    p = ts.add_parser("add", parents=[common], help="issue a token for a party (printed once)")
    p.add_argument("name", help="the party's name, as the agent will see it")
    p.set_defaults(func=cmd_token_add)
    p = ts.add_parser("list", parents=[common], help="the names of the known parties")
    p.set_defaults(func=cmd_token_list)
    p = ts.add_parser("remove", parents=[common], help="withdraw a party's token")
    p.add_argument("name", help="the party whose token goes (its requests are an unknown party's from then on)")
    p.set_defaults(func=cmd_token_remove)


def _path(args):
    from meshnode.a2a.settings import a2a_settings

    config = _config(args)
    return config.home / a2a_settings(config.values).known_tokens_path


def cmd_token_add(args) -> int:
    from meshnode.a2a.admission import add_token

    try:
        token = add_token(_path(args), args.name)
    except (ValueError, PermissionError) as exc:
        raise MeshnodeError("bad_request", str(exc)) from None
    print(token)
    return 0


def cmd_token_list(args) -> int:
    from meshnode.a2a.admission import token_names

    for name in token_names(_path(args)):
        print(name)
    return 0


def cmd_token_remove(args) -> int:
    from meshnode.a2a.admission import remove_token

    if not remove_token(_path(args), args.name):
        raise MeshnodeError("not_found", f"no token for {args.name[:64]}")
    print(f"{args.name}: token withdrawn")
    return 0
