"""The parsers of the commands in ``meshnode.faces.cli.chat`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.chat")


def add_parsers(sub, common) -> None:
    p = sub.add_parser("chat", parents=[common], help="talk with the agent: send a message, list or show conversations",
                       description="Send the agent a message (a private note it sees in full at its next tick and"
                                   " answers in the same thread), or read the conversations.",
                       epilog="examples: meshnode chat 'what is 2+2?'   meshnode chat list   meshnode chat show T\n"
                              "          meshnode chat --thread T 'and 3+3?'   meshnode chat -m list  (the word itself)\n"
                              "          meshnode chat thread rename T 'new title'   meshnode chat thread archive T\n"
                              "          meshnode chat thread unarchive T   meshnode chat thread delete T\n"
                              "          meshnode chat list --archived")
    p.add_argument("words", nargs="*", metavar="TEXT",
                   help="the message; or `list`, `show THREAD`, `thread rename|archive|unarchive|delete THREAD`")
    p.add_argument("--archived", action="store_true", help="list: the archived conversations")
    p.add_argument("-m", "--message", help="the message (when it is the word list or show)")
    p.add_argument("--thread", help="a conversation's id (from `meshnode chat list`)")
    p.add_argument("--limit", type=int, default=None, help="at most this many threads (50) or messages (100)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_chat)
