"""Whether a home's node runs, and which process it is: a lock the node holds while it runs and its pid file.

Theory of operation: ``meshnode run`` takes an exclusive ``flock`` on ``<home>/run/node.lock`` for
as long as its process lives and writes its pid to ``<home>/run/node.pid``. The kernel drops the
lock when the process ends, however it ends (SIGKILL, a crash), so "the lock is held" is the one
test of "a node runs here", and the pid file is trusted only while it is: a pid file left by a
node that died is stale, and is replaced by the next run, never signalled (its number may belong
to another process by now). ``holder`` answers without taking the lock for more than an instant.
Only the node writes its pid file (``hold``), and ``stop`` is the one way to end a home's node from
outside: ``meshnode stop`` and a parent's ``children stop`` (engines/spawn/launch.py) both call it.
"""

from __future__ import annotations

import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from meshnode.base.errors import MeshnodeError

LOCK_FILE = Path("run") / "node.lock"
PID_FILE = Path("run") / "node.pid"  # written by the node alone (``hold``), for every home: a spawned child's too
POLL_S = 0.1  # how often ``stop`` looks whether the home is free again
KILL_WAIT_S = 10.0  # after SIGKILL: the kernel ends a process at once, unless it is stuck in the kernel


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


@dataclass(frozen=True)
class Stopped:
    """What ``stop`` did: the node's pid, the signal that ended it (``SIGTERM``: it stopped by
    itself; ``SIGKILL``: it had to be killed, its last writes may be lost) and how long it took."""
    pid: int
    how: str
    seconds: float


def stop(home: Path, timeout: float, *, kill_wait: float = KILL_WAIT_S) -> Stopped | None:
    """End the node that holds ``home``: SIGTERM to the pid its lock vouches for, a wait until the
    lock is free (the process is gone, however it ended), SIGKILL after ``timeout`` seconds. None
    when no node runs there. MeshnodeError ``no_pid`` (held, but its pid file is gone: nothing safe
    to signal), ``stop_failed`` (not allowed to signal it, or still there after SIGKILL). Blocking."""
    home = Path(home)
    pid = holder(home)
    if pid is None:
        return None
    if not pid:
        raise MeshnodeError("no_pid", f"a node holds {home} but its pid file {home / PID_FILE} is gone:"
                                      f" stop it by hand (`fuser {home / LOCK_FILE}` names it)")
    started = time.monotonic()
    _signal(pid, signal.SIGTERM)
    if _wait_released(home, timeout):
        return Stopped(pid, "SIGTERM", time.monotonic() - started)
    _signal(pid, signal.SIGKILL)
    if not _wait_released(home, kill_wait):
        raise MeshnodeError("stop_failed", f"the node (pid {pid}) is still running after SIGKILL")
    if read_pid(home) == pid:  # a killed node never removed its own
        (home / PID_FILE).unlink(missing_ok=True)
    return Stopped(pid, "SIGKILL", time.monotonic() - started)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass  # gone meanwhile: the wait sees it
    except PermissionError as exc:
        raise MeshnodeError("stop_failed", f"not allowed to signal the node (pid {pid}): {exc.strerror}") from None


def _wait_released(home: Path, timeout: float) -> bool:
    """Wait until no process holds ``home`` (True), at most ``timeout`` seconds (False)."""
    deadline = time.monotonic() + timeout
    while holder(home) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True
