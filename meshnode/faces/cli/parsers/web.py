"""The parsers of the commands in ``meshnode.faces.cli.web`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.web")


def add_parsers(sub, common) -> None:
    w = sub.add_parser("web", parents=[common], help="the web notebook: its login link",
                       description="The web notebook that `meshnode run` serves ([web] in config.toml).")
    ws = w.add_subparsers(dest="web_command", metavar="SUBCOMMAND", required=True)
    p = ws.add_parser("url", parents=[common], help="print the login link (with the token)",
                      description="Print the link that logs a browser in: http://HOST:PORT/login#t=TOKEN."
                                  " Works with the node stopped.")
    p.add_argument("--rotate", action="store_true",
                   help="write a new token first (ends every session and every script's token)")
    p.set_defaults(func=commands.cmd_url)
