"""The ``meshnode`` command line.

Exit codes: 0 ok, 1 runtime error (one clear line on stderr, no traceback),
2 usage error, 3 answered as last known because the node is not running (``peers``). Every command takes ``--home DIR`` (or $MESHNODE_HOME), before
or after the command name.

Every call builds the parser, so this module and the parsers it builds from
(``meshnode.faces.cli.parsers``) load little; a command's own module (and what it needs: the
store, trio, the node) is imported when that command runs. When the command word is certain
(``meshnode status``), only that command's parser is filled in: the others are named, with
their help, and nothing more (``--help`` and an unknown word build the whole tree).

The package: this module builds the parser and runs ``main``; ``parsers`` holds each command
group's parsers; the commands themselves are one module per group (``node``, ``gmp``, ``gate``,
``reactor``, ...) sharing ``common``. A face: it imports no other face.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from pathlib import Path

from meshnode import __version__
from meshnode.faces.cli import parsers
from meshnode.faces.cli.parsers.commands import Command, Commands
from meshnode.faces.cli.parsers.vocabulary import AUDIENCES, AUTOSTARTS, NOTE_SOURCES
from meshnode.base.errors import MeshnodeError

commands = Commands("meshnode.faces.cli.node")

_PEER = "the peer: its DID (did:key:...), its petname or announced name, or its short id (key:...)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (``command``) one whose other commands are only named."""
    with _translated_once():
        return _build_parser(command)


_VALUE_OPTIONS = ("--home", "--db", "--key-file", "--log-level")  # the options before a command that take a value


def command_of(argv: list[str]) -> str | None:
    """The command word of ``argv`` when it is certain: the first word that is neither one of the
    options above nor its value. None (the whole parser is built) for anything else before it:
    ``--help``, ``--version``, an abbreviated option, ``--``."""
    words = iter(argv)
    for word in words:
        if word in _VALUE_OPTIONS:
            next(words, None)
        elif word.split("=", 1)[0] in _VALUE_OPTIONS:
            continue
        elif word.startswith("-"):
            return None
        else:
            return word
    return None


class _OnlyCommand:
    """The commands as the parser modules see them when only ``command`` will be parsed: every
    command is added (the choices, the top-level help and an unknown word's error are unchanged),
    only ``command``'s parser gets its arguments and subcommands."""

    def __init__(self, sub: argparse._SubParsersAction, command: str):
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kwargs):
        if name == self.command:
            return self.sub.add_parser(name, **kwargs)
        self.sub.add_parser(name, help=kwargs.get("help"))
        return _Unparsed()


class _Unparsed:
    """Another command's parser: what is added to it is dropped (it is never parsed)."""

    def __getattr__(self, name: str):
        return self._drop

    def _drop(self, *args, **kwargs) -> "_Unparsed":
        return self


@contextlib.contextmanager
def _translated_once():
    """While the parser is built, each of argparse's own phrases ("options", "show this help message
    and exit", ...) is translated once: argparse asks gettext for them again for every parser, about
    400 times for the whole tree, and gettext looks for a catalogue on disk each time (a third of the
    build). The answers cannot change within the build."""
    plain = getattr(argparse, "_", None)
    if plain is None:  # an argparse that no longer translates through a module-level ``_``
        yield
        return
    argparse._ = functools.lru_cache(maxsize=None)(plain)
    try:
        yield
    finally:
        argparse._ = plain


def _build_parser(command: str | None) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", default=argparse.SUPPRESS,
                        help="the node's home directory (default: $MESHNODE_HOME or ~/.meshnode)")
    common.add_argument("--db", default=argparse.SUPPRESS, help="database path (overrides [store] path)")
    common.add_argument("--key-file", default=argparse.SUPPRESS, help="key file path (overrides [keys] path)")
    common.add_argument("--log-level", default=argparse.SUPPRESS, choices=("debug", "info", "warning", "error"),
                        help="how much the node logs to stderr (overrides [log] level)")
    common.add_argument("--did", dest="full_dids", action="store_true", default=argparse.SUPPRESS,
                        help="print agents by their whole DIDs, not by their names")

    parser = argparse.ArgumentParser(prog="meshnode", parents=[common],
                                     description="A HyperCortex Mesh Protocol node.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="exit codes: 0 done, 1 failed (one line on stderr says why), 2 usage,\n"
                                            "3 the node is not running (a command that needs it; `peers` then lists\n"
                                            "what it last knew; `stop`: nothing to stop; `start`: it already runs),\n"
                                            "4 `stop` had to kill it, 141 the reader of the output left (| head)")
    parser.add_argument("--version", action="version", version=f"meshnode {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if command is not None:
        sub = _OnlyCommand(sub, command)

    p = sub.add_parser("init", parents=[common], help="create the node's home, key and database")
    p.add_argument("--name", help="the node's display name (default: the home folder's name)")
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt the key file with a passphrase ($MESHNODE_KEY_PASSPHRASE or a prompt)")
    p.add_argument("--exist-ok", action="store_true", help="succeed (and change nothing) if already initialised")
    p.add_argument("--from-bundle", metavar="FILE", help="become a child of the node that wrote this bundle"
                   " (meshnode spawn --bundle): its store, config and invitation; the key is made here")
    p.add_argument("--autostart", choices=AUTOSTARTS, default="none", help="with --from-bundle: how the child"
                   " starts with the host (default none)")
    p.add_argument("--start", action="store_true", help="with --from-bundle: start the child now")
    p.set_defaults(func=commands.cmd_init)

    p = sub.add_parser("run", parents=[common], help="run the node until SIGINT/SIGTERM",
                       epilog="It prints its DID, its addresses and the line another node puts in its\n"
                              "bootstrap.txt to connect to it.")
    p.add_argument("--detached", action="store_true", help=argparse.SUPPRESS)  # `meshnode start`'s: log to the file only
    p.set_defaults(func=Command("meshnode.node.run", "cmd_run"))  # the node's own: the CLI never imports it
    parsers.lifecycle.add_parsers(sub, common)  # start, stop, logs, log-level

    p = sub.add_parser("status", parents=[common], help="who this node is and what it holds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_status)

    note = sub.add_parser("note", parents=[common], help="the notebook").add_subparsers(
        dest="note_command", required=True, metavar="SUBCOMMAND")
    p = note.add_parser("add", parents=[common], help="write a signed note",
                        epilog="example: meshnode note add 'lunch at noon #food @bob' --audience friends\n"
                               "         meshnode note add --file report.md --audience public\n"
                               "         some-command | meshnode note add -\n"
                               "A note holds at most 64 KiB of UTF-8 text.")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("text", nargs="?", help="the note (#hashtags and @mentions in it are indexed); - reads it"
                                               " from standard input")
    given.add_argument("--file", metavar="PATH", help="read the note's text from this UTF-8 file instead")
    p.add_argument("--topic", help="a topic line")
    p.add_argument("--tags", help="comma-separated local tags (kept on this node only)")
    p.add_argument("--audience", choices=AUDIENCES, default="private",
                   help="private: this node only; friends: sent to friends; public: gossiped to everyone")
    p.add_argument("--priority", type=int, default=0, help="higher is more urgent (default 0)")
    p.add_argument("--forward", type=int, choices=(0, 1, 2), default=0,
                   help="a friends note may travel this many hops past its recipients, friend to friend")
    p.add_argument("--reply-to", metavar="NOTE", help="the note this one answers (its thread's topic unless --topic)")
    p.set_defaults(func=commands.cmd_note_add)
    p = note.add_parser("list", parents=[common], help="recent notes: short id (* unread), time, author -> audience, text",
                        epilog="`meshnode note read ID` shows one in full (ID: the short id in the first column)")
    p.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    p.add_argument("--before", metavar="NOTE", help="the next page: the notes older than this one (its short id)")
    p.add_argument("--search", metavar="TEXT", help="only notes whose text or topic contains TEXT")
    read = p.add_mutually_exclusive_group()
    read.add_argument("--unread", action="store_true", default=None, help="only unread notes")
    read.add_argument("--read", dest="unread", action="store_false", help="only notes already read")
    p.add_argument("--source", choices=NOTE_SOURCES, help="only notes from this source (cli, user: the person)")
    p.add_argument("--topic", help="only notes with exactly this topic")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_note_list)
    parsers.knowledge.add_note_parsers(note, common)
    parsers.knowledge.add_parsers(sub, common)
    parsers.reputation.add_parsers(sub, common)
    parsers.consensus.add_parsers(sub, common)
    parsers.llm.add_parsers(sub, common)
    parsers.mind.add_parsers(sub, common)
    parsers.gate.add_parsers(sub, common)
    parsers.ethics.add_parsers(sub, common)
    parsers.gmp.add_parsers(sub, common)
    parsers.reactor.add_parsers(sub, common)
    parsers.web.add_parsers(sub, common)
    parsers.a2a.add_parsers(sub, common)
    parsers.inbox.add_parsers(sub, common)
    parsers.chat.add_parsers(sub, common)
    parsers.spawn.add_parsers(sub, common)
    parsers.children.add_parsers(sub, common)
    parsers.mcp.add_parsers(sub, common)
    parsers.names.add_parsers(sub, common)
    parsers.config.add_parsers(sub, common)

    p = sub.add_parser("peers", parents=[common], help="known peers with liveness",
                       epilog="With the node stopped it lists what the node last knew (liveness aged by the\n"
                              "silence since each peer was heard), says so on stderr and exits 3.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_peers)
    p = sub.add_parser("ping", parents=[common], help="round trip to a peer (needs a running node)")
    p.add_argument("did", metavar="PEER", help=_PEER)
    p.set_defaults(func=commands.cmd_ping)
    p = sub.add_parser("find", parents=[common], help="find a peer by DID, or peers by interest (needs a running node)",
                       epilog="examples: meshnode find did:key:z6Mk...   meshnode find --interest chemistry")
    p.add_argument("did", nargs="?", metavar="PEER", help=_PEER)
    p.add_argument("--interest", help="an interest tag instead of a DID")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_find)
    p = sub.add_parser("send", parents=[common], help="push a container file to a peer (needs a running node)")
    p.add_argument("did", metavar="PEER", help=_PEER)
    p.add_argument("file", type=Path, help="a container file (e.g. from `meshnode container export`)")
    p.set_defaults(func=commands.cmd_send)
    friend = sub.add_parser("friend", parents=[common], help="friends: who gets your friends notes").add_subparsers(
        dest="friend_command", required=True, metavar="SUBCOMMAND")
    for name, helptext in (("add", "make a peer a friend"), ("remove", "stop sharing friends notes with a peer")):
        p = friend.add_parser(name, parents=[common], help=helptext)
        p.add_argument("did", metavar="PEER", help=_PEER)
        p.set_defaults(func=commands.cmd_friend, friend_on=(name == "add"))
    p = friend.add_parser("list", parents=[common], help="list friends")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_friend_list)
    p = sub.add_parser("metrics", parents=[common], help="the running node's counters, gauges and timings (count and sum)")
    p.set_defaults(func=commands.cmd_metrics)

    cont = sub.add_parser("container", parents=[common], help="inspect container files").add_subparsers(
        dest="container_command", required=True, metavar="SUBCOMMAND")
    p = cont.add_parser("show", parents=[common], help="print a container file as JSON (exit 1 if it does not verify)")
    p.add_argument("file", type=Path, help="the container file")
    p.set_defaults(func=commands.cmd_container_show)
    p = cont.add_parser("verify", parents=[common], help="verify a container file; exit 1 if invalid")
    p.add_argument("file", type=Path, help="the container file")
    p.set_defaults(func=commands.cmd_container_verify)
    p = cont.add_parser("export", parents=[common], help="write a stored container to a file")
    p.add_argument("did", metavar="CONTAINER", help="its container DID or short id")
    p.add_argument("file", type=Path, help="where to write it")
    p.set_defaults(func=commands.cmd_container_export)
    _describe(parser)
    return parser


def _describe(parser: argparse.ArgumentParser) -> None:
    """Give every subcommand its one-line help as the description its own ``--help`` shows
    (unless it has one), and keep the line breaks of examples in epilogs."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                if not sub.description and helps.get(name):
                    sub.description = helps[name][:1].upper() + helps[name][1:] + "."
                if sub.epilog:
                    sub.formatter_class = argparse.RawDescriptionHelpFormatter
                _describe(sub)


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _run(argv)
        finally:  # also after --help or a usage error (SystemExit)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_left()


def _run(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_of(argv)).parse_args(argv)
    os.umask(0o077)  # everything a node writes (database, notes, config) is its owner's alone
    from meshnode.records.gmp import store_hooks  # here, not at the top: --version and --help stay light

    store_hooks.install()  # every database this process opens admits and draws GMP containers
    from meshnode.faces.cli import common

    common.show_dids(getattr(args, "full_dids", False))
    try:
        return args.func(args) or 0
    except MeshnodeError as exc:
        print(f"meshnode: {exc.reason}", file=sys.stderr)
        return common.NOT_RUNNING if exc.code == "node_not_running" else 1


def _reader_left() -> int:
    """The reader of our output went away (``meshnode note list | head -3``): end quietly
    with the shell's code for SIGPIPE. What is still buffered goes to /dev/null, so the
    interpreter's own flush at exit cannot complain either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


if __name__ == "__main__":
    sys.exit(main())
