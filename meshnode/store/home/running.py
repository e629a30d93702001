"""Whether a home's node runs, and which process it is: a lock the node holds while it runs and its pid file.

Theory of operation: ``meshnode run`` takes an exclusive ``flock`` on ``<home>/run/node.lock`` for
as long as its process lives and writes its pid to ``<home>/run/node.pid``. The kernel drops the
lock when the process ends, however it ends (SIGKILL, a crash), so "the lock is held" is the one
test of "a node runs here", and the pid file is trusted only while it is: a pid file left by a
node that died is stale, and is replaced by the next run, never signalled (its number may belong
to another process by now). ``holder`` answers without taking the lock for more than an instant.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from meshnode.base.errors import MeshnodeError

LOCK_FILE = Path("run") / "node.lock"
PID_FILE = Path("run") / "node.pid"  # the same file a spawned child's start.sh and launch write


class Running:
    """This process's hold on its home: the lock (kept open) and the pid file it wrote."""

    def __init__(self, home: Path, fd: int, stale_pid: int | None):
        self.home, self._fd = Path(home), fd
        self.stale_pid = stale_pid  # the pid a dead node's file named (replaced), None when there was none

    def remove_pid(self) -> None:
        """At the node's end: its pid file removed (while it still names this process). The lock
        stays until the process is gone, so "no lock" means "no process" to whoever waits for it."""
        if read_pid(self.home) == os.getpid():
            (self.home / PID_FILE).unlink(missing_ok=True)

    def release(self) -> None:
        """The pid file removed and the lock dropped now (a process that goes on without the home)."""
        if self._fd < 0:
            return
        self.remove_pid()
        os.close(self._fd)
        self._fd = -1


def hold(home: Path) -> Running:
    """Take ``home`` for this process: MeshnodeError ``node_running`` (naming the pid) when another
    node holds it. A stale pid file is replaced (``Running.stale_pid`` says which pid it named)."""
    home = Path(home)
    (home / LOCK_FILE).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        pid = read_pid(home)
        raise MeshnodeError("node_running", f"a node already runs in {home}" + (f" (pid {pid})" if pid else "")
                            + ": stop it first (`meshnode stop`)") from None
    stale = read_pid(home)
    tmp = home / PID_FILE.with_suffix(".tmp")
    tmp.write_text(f"{os.getpid()}\n", encoding="ascii")
    os.replace(tmp, home / PID_FILE)
    return Running(home, fd, stale if stale != os.getpid() else None)


def holder(home: Path) -> int | None:
    """The pid of the node running in ``home`` (its pid file's, or 0 when the file is missing or
    unreadable), None when none runs."""
    try:
        fd = os.open(Path(home) / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_pid(home) or 0
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def read_pid(home: Path) -> int | None:
    """The number in the pid file (None when there is none, or it is not one): not proof of anything."""
    try:
        text = (Path(home) / PID_FILE).read_text(encoding="ascii")[:32].strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) > 0 else None
