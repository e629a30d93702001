"""``meshnode start|stop|logs|log-level``: the node as a background process of its home.

``start`` checks what ``run`` would (the config, the key: a passphrase is asked here and handed to
the node), then runs ``<python> -m meshnode --home HOME run --detached`` in its own session (stdin
from /dev/null, stdout and stderr to ``logs/console.log``), and waits until the node holds its home
and answers on its control socket, or until it exits (then the end of what it printed says why).
``stop`` is ``running.stop`` (store/home/running.py, which a parent's ``children stop`` uses too):
SIGTERM to the pid the home's lock vouches for, a wait while the node finishes its writes and
records its stop, SIGKILL after ``--timeout``. ``logs``
reads ``logs/node.log`` and its rotated files, with or without a node; ``-f`` follows the file
across rotations (polling: the command line has no event loop). ``log-level`` is an action of the
running node (app/actions/node_log.py).

Exit codes beyond 0, 1, 2: 3 nothing to do (start: it already runs; stop: none runs), 4 stop had to
kill it (its last writes may be lost).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Iterable, Iterator

from meshnode.base import node_log
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keyfile import PASSPHRASE_ENV, key_file_is_encrypted
from meshnode.faces.cli.common import _config, act, terminal_safe
from meshnode.net import control
from meshnode.store.home import open_identity, running

NOTHING_TO_DO = 3
KILLED = 4
POLL_S = 0.1  # how often start looks again, and logs -f at the file
TAIL_LINES = 15  # of a failed start's console


def cmd_start(args) -> int:
    config = _config(args)
    home = Path(os.path.abspath(config.home))
    pid = running.holder(home)
    if pid is not None:
        print(f"already running in {home} (pid {pid or '?'}): `meshnode stop` stops it")
        return NOTHING_TO_DO
    stale = running.read_pid(home)  # a pid file no node holds: the node replaces it
    if stale is not None:
        print(f"meshnode: the pid file {home / running.PID_FILE} names pid {stale}, which runs no node here:"
              " replaced", file=sys.stderr)
    env = dict(os.environ)
    env.update(_passphrase(config))
    open_identity(config, env.get(PASSPHRASE_ENV))  # a missing home, a wrong passphrase: refused here, in one line
    console = home / node_log.CONSOLE_FILE
    console.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(console, "wb") as out:
        try:
            proc = subprocess.Popen(_run_argv(args, home), cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        except OSError as exc:
            raise MeshnodeError("start_failed", f"cannot start {sys.executable}: {exc.strerror or exc}") from None
    status = _wait_up(proc, config, args.timeout)
    log = home / node_log.LOG_FILE
    if status is None:
        if proc.poll() is None:
            print(f"meshnode: the node (pid {proc.pid}) did not answer within {args.timeout:g} s; it is left"
                  f" starting: `meshnode logs -f` shows what it does, `meshnode stop` stops it", file=sys.stderr)
            return 1
        print(f"meshnode: the node exited at start (code {proc.returncode}); the end of {console}:", file=sys.stderr)
        for line in _tail(console, TAIL_LINES) or _tail(log, TAIL_LINES):
            print(f"  {terminal_safe(line)}", file=sys.stderr)
        return 1
    print(terminal_safe(_started_line(proc.pid, status, log)))
    return 0


def _passphrase(config) -> dict:
    """The key's passphrase for the node's environment: asked here when the key is encrypted, no
    $MESHNODE_KEY_PASSPHRASE is set and a person is at the terminal (the node has no terminal)."""
    path = config.key_path
    if os.environ.get(PASSPHRASE_ENV) or not path.exists() or not key_file_is_encrypted(path) or not sys.stdin.isatty():
        return {}
    import getpass

    return {PASSPHRASE_ENV: getpass.getpass(f"passphrase for {path}: ")}


def _run_argv(args, home: Path) -> list[str]:
    """``meshnode run --detached`` with this call's home and overrides (paths made absolute: the
    node runs in its home)."""
    argv = [sys.executable, "-m", "meshnode", "--home", str(home)]
    for option, attr, is_path in (("--db", "db", True), ("--key-file", "key_file", True),
                                  ("--log-level", "log_level", False)):
        value = getattr(args, attr, None)
        if value is not None:
            argv += [option, os.path.abspath(value) if is_path else value]
    return argv + ["run", "--detached"]


def _wait_up(proc: subprocess.Popen, config, timeout: float) -> dict | None:
    """The node's status once it holds the home and answers (and its web address is bound, when
    the web is on); None when it exited first, or ``timeout`` passed."""
    sock = control.socket_path(config.db_path.parent)
    web = bool(config.values["web"]["enabled"])
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if running.holder(config.home) == proc.pid:
            try:
                status = control.call(sock, "status", timeout=max(1.0, deadline - time.monotonic()))
            except control.ControlError:
                status = None
            if status is not None and (status.get("web") or not web):
                return status
        time.sleep(POLL_S)
    return None


def _started_line(pid: int, status: dict, log: Path) -> str:
    """``started NAME (pid N): ADDRESS, web URL; log PATH``: one line."""
    addresses = list(status.get("addresses") or [])
    outside = [a for a in addresses if not a.startswith(("/ip4/127.", "/ip6/::1/"))]
    shown = (outside or addresses)[:1]
    more = f" (+{len(addresses) - 1} more: `meshnode status`)" if len(addresses) > 1 else ""
    parts = [(shown[0] + more) if shown else "no listen address"]
    if status.get("web"):
        parts.append(f"web {status['web']} (`meshnode web url` to log in)")
    return f"started {status.get('name', 'meshnode')} (pid {pid}): {', '.join(parts)}; log {log}"


def cmd_stop(args) -> int:
    config = _config(args)
    home = Path(os.path.abspath(config.home))
    done = running.stop(home, args.timeout)
    if done is None:
        print(f"not running: no node runs in {home}")
        return NOTHING_TO_DO
    if done.how == "SIGTERM":
        print(f"stopped (pid {done.pid}, {done.seconds:.1f} s)")
        return 0
    print(f"killed: the node (pid {done.pid}) did not stop within {args.timeout:g} s after SIGTERM; its last writes"
          f" may be lost (`meshnode logs` shows how far it got)")
    return KILLED


def cmd_log_level(args) -> int:
    config = _config(args)
    got = act(config, "log_level", {"level": args.level} if args.level else {})
    if args.level is None:
        print(f"log level: {got['level']}")
    else:
        print(f"log level: {got['level']} (was {got['was']}); for this run only (`meshnode config set log.level"
              f" {got['level']}` keeps it)")
    return 0


# --- meshnode logs ---------------------------------------------------------------------------------------

_RANK = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}


class LevelFilter:
    """Which lines of a log pass ``--level``: a record's first line by its level, the lines after it
    (a traceback) with it; a line before any record (the banner a node prints) passes only with no
    level. One filter per file read from its start (a record never spans two files)."""

    def __init__(self, level: str | None):
        self.least = _RANK[level.upper()] if level else None
        self.passing = self.least is None

    def __call__(self, line: str) -> bool:
        if self.least is None:
            return True
        found = node_log.record_level(line)
        if found is not None:
            self.passing = _RANK[found] >= self.least
        return self.passing


def rotated(path: Path) -> list[Path]:
    """``path`` and its rotated files, oldest first (node.log.5 ... node.log.1, node.log)."""
    older = []
    for candidate in path.parent.glob(path.name + ".*"):
        suffix = candidate.name[len(path.name) + 1:]
        if suffix.isdigit():
            older.append((int(suffix), candidate))
    return [p for _, p in sorted(older, reverse=True)] + ([path] if path.exists() else [])


def last_lines(files: list[Path], count: int, level: str | None, current=None) -> list[str]:
    """The last ``count`` lines passing ``level`` of ``files`` (oldest first), read newest file
    first until there are enough; ``current``: the newest file already open (read to its end)."""
    if count == 0:
        if current is not None:
            current.seek(0, os.SEEK_END)
        return []
    found: deque[str] = deque()
    for i, path in enumerate(reversed(files)):
        keep = LevelFilter(level)
        lines: deque[str] = deque(maxlen=count)
        if i == 0 and current is not None:
            lines.extend(line for line in _lines(current) if keep(line))
        else:
            try:
                with open(path, "rb") as fh:
                    lines.extend(line for line in _lines(fh) if keep(line))
            except OSError:
                continue
        found.extendleft(reversed(lines))
        if len(found) >= count:
            break
    return list(found)[-count:]


def _lines(fh) -> Iterator[str]:
    for raw in fh:
        yield raw.decode("utf-8", errors="replace").rstrip("\n")


def _tail(path: Path, count: int) -> list[str]:
    return last_lines([path] if path.exists() else [], count, None)


def cmd_logs(args) -> int:
    config = _config(args)
    path = node_log.log_path(config.home)
    current = _open(path)
    if current is None and not args.follow:
        raise MeshnodeError("no_log", f"no log at {path} yet: it is written by `meshnode run` and `meshnode start`")
    try:
        _print(last_lines(rotated(path), args.lines, args.level, current))
        if args.follow:
            follow(path, current, LevelFilter(args.level), _print, gone=_reader_gone)
    finally:
        if current is not None:
            current.close()
    return 0


def _open(path: Path):
    try:
        return open(path, "rb")
    except FileNotFoundError:
        return None


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        print(terminal_safe(line))
    sys.stdout.flush()  # a reader gone (`| head`) shows here: the command line ends quietly


def _reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has gone (`logs -f | head -3`: head is done). Without
    a look, a quiet log kept the command waiting until the next line, as older `tail -f` did."""
    poller = select.poll()
    poller.register(sys.stdout.fileno(), 0)  # POLLERR and POLLHUP are reported whatever is asked
    return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))


def follow(path: Path, fh, keep: LevelFilter, out, *, polls: int | None = None, gone=lambda: False) -> None:
    """Print what is appended to ``path`` from ``fh``'s position on, until ``gone()`` (``polls``:
    that many looks, for tests). When the file is rotated (``path`` is another file now) or truncated, what is
    left of the old one is read first, then the new one from its start."""
    partial = b""
    while polls is None or polls > 0:
        polls = None if polls is None else polls - 1
        if fh is not None:
            chunk = fh.read()
            if chunk:
                data = partial + chunk
                *complete, partial = data.split(b"\n")
                out([line for line in (c.decode("utf-8", errors="replace") for c in complete) if keep(line)])
                continue
        replaced = _replaced(path, fh)
        if replaced is not None:
            if fh is not None:
                rest = fh.read()  # written between our last read and the rotation
                fh.close()
                data = partial + rest
                lines = [d.decode("utf-8", errors="replace") for d in data.split(b"\n") if d]
                out([line for line in lines if keep(line)])
            fh, partial = replaced, b""
            keep.passing = keep.least is None
            continue
        if gone():
            return
        time.sleep(POLL_S)


def _replaced(path: Path, fh):
    """A new file handle when ``path`` is no longer the file ``fh`` reads (rotated, or created
    since), or was truncated below where we are; else None."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return None
    if fh is not None:
        was = os.fstat(fh.fileno())
        if (now.st_dev, now.st_ino) == (was.st_dev, was.st_ino) and now.st_size >= fh.tell():
            return None
    return _open(path)
