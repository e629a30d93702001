"""The node's log file: where it is (``<home>/logs/node.log``), how a record looks, how it rotates,
and the level the running node logs at.

Theory of operation: ``meshnode run`` (and so ``meshnode start``, which runs it detached) writes
every record to the log file through the standard library's RotatingFileHandler: when a record
would take the file past ``[log] file_kib`` it becomes ``node.log.1`` (the older ones move up,
``[log] files`` of them are kept). It also logs to stderr as before, except when stderr is that very
file (a child started with its output appended to it) or the node was started detached (its
stderr is ``logs/console.log``): a record is never written twice into one file. The level is the
root logger's: ``set_level`` changes it while the node runs (``meshnode log-level``), for this
run only. ``meshnode logs`` reads the files back (``record_level`` tells a record's first line).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
from pathlib import Path

from meshnode.base.config.node import LOG_LEVELS as LEVELS

LOG_FILE = Path("logs") / "node.log"  # relative to the home, as every file of a home
CONSOLE_FILE = Path("logs") / "console.log"  # a detached node's stdout and stderr (``meshnode start``)
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


def log_path(home: Path) -> Path:
    return Path(home) / LOG_FILE


def log_to_stderr(level: str) -> None:
    """What every command does: its records to stderr at ``level`` (the first call sets it)."""
    logging.basicConfig(level=level.upper(), stream=sys.stderr, format=FORMAT)


def attach_file(home: Path, max_bytes: int, backups: int, *, detached: bool = False) -> logging.Handler:
    """Add the rotating log file of ``home`` to the root logger (its folder made, 0700), and take
    the stderr handler away when stderr is that file or the node runs detached. Returns its handler."""
    path = log_path(home)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        if isinstance(old, logging.StreamHandler) and getattr(old, "stream", None) is sys.stderr \
                and (detached or _same_file(sys.stderr, path)):
            root.removeHandler(old)
    root.addHandler(handler)
    return handler


def file_only(name: str, handler: logging.Handler) -> logging.Logger:
    """A logger whose records go to ``handler`` alone, at INFO whatever the level: the node's start
    and end in its log file (the reason it failed, a traceback), without a word more on stderr,
    where the command line says the reason itself."""
    logger = logging.getLogger(name)
    logger.propagate = False
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    return logger


def _same_file(stream, path: Path) -> bool:
    try:
        here, there = os.fstat(stream.fileno()), os.stat(path)
    except (OSError, ValueError, AttributeError):
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def level() -> str:
    """The level the root logger logs at, as config names it (``info``)."""
    return logging.getLevelName(logging.getLogger().level).lower()


def set_level(name: str) -> str:
    """Log at ``name`` (one of LEVELS) from now on; returns the level before."""
    if name not in LEVELS:
        raise ValueError(name)
    before = level()
    logging.getLogger().setLevel(name.upper())
    return before


def record_level(line: str) -> str | None:
    """The level of the record ``line`` begins (``WARNING``), None for a line inside one (a
    traceback's) or one the node printed (its banner)."""
    match = _RECORD.match(line)
    return match[1] if match else None
