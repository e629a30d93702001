"""The parsers of the commands in ``meshnode.faces.cli.lifecycle`` (imported only when one runs):
the node started in the background and stopped, its log read and its level changed."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import LOG_LEVELS as LEVELS

commands = Commands("meshnode.faces.cli.lifecycle")

EXIT_CODES = ("exit codes: 0 done; 1 failed; 2 usage; 3 nothing to do (start: it already runs;"
              " stop: none runs); 4 stop: it did not stop within --timeout and was killed")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError("between 0.1 and 3600 seconds")
    return value


def _lines(text: str) -> int:
    if not text.isdigit() or int(text) > 1_000_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of lines from 0 to 1000000")
    return int(text)


def add_parsers(sub, common) -> None:
    p = sub.add_parser("start", parents=[common], help="start the node in the background and wait until it is up",
                       epilog="It prints its pid, its address, its web address and its log file on one line.\n"
                              "`meshnode stop` stops it; `meshnode run` runs it in the foreground (systemd).\n"
                              + EXIT_CODES)
    p.add_argument("--timeout", type=_seconds, default=60.0, metavar="SECONDS",
                   help="how long to wait until it answers (default 60); a node still starting then is left running")
    p.set_defaults(func=commands.cmd_start)
    p = sub.add_parser("stop", parents=[common], help="stop the running node: gracefully, killed after --timeout",
                       epilog=EXIT_CODES)
    p.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                   help="how long it may take to finish its writes before it is killed (default 30)")
    p.set_defaults(func=commands.cmd_stop)
    p = sub.add_parser("logs", parents=[common], help="the node's log file (a stopped node's too)",
                       epilog="examples: meshnode logs -n 200 --level warning   meshnode logs -f\n"
                              "The file: <home>/logs/node.log, rotated to node.log.1... ([log] file_kib, files).")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing what is written (across rotations)"
                   " until Ctrl-C")
    p.add_argument("-n", "--lines", type=_lines, default=50, metavar="N", help="the last N lines (default 50)")
    p.add_argument("--level", choices=LEVELS, help="only records at this level or above (warning: WARNING, ERROR,"
                   " CRITICAL)")
    p.set_defaults(func=commands.cmd_logs)
    p = sub.add_parser("log-level", parents=[common], help="the running node's log level: show it, or change it"
                       " until it stops", epilog="For this run only: `meshnode config set log.level LEVEL` keeps a"
                       " level for the next starts.")
    p.add_argument("level", nargs="?", choices=LEVELS, help="the new level (none: show the level)")
    p.set_defaults(func=commands.cmd_log_level)
