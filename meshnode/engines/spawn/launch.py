"""Starting and stopping a local child node, whichever way its autostart was installed.

Theory of operation: a child runs as ``<python> -m meshnode --home <home> run --detached``, as
``meshnode start`` runs a node: detached from whoever started it (its own session, stdin closed,
its console output in ``<home>/logs/console.log``, its records in the rotating ``logs/node.log``
alone), so it outlives a CLI call and is never killed with the parent's process group. The child
holds its home and writes its own pid file (store/home/running.py); a start returns once it does
(or has ended), and ``stop`` is ``running.stop``, the very logic of ``meshnode stop``, unless a
systemd unit runs it. A child the running parent started directly is the
parent's own process, which the parent waits on (``spawn.processes``: no zombie); how it ended
goes in ``<home>/run/node.exit`` (``exit_record``), which ``process_state`` reads. It gets the parent's environment minus every
``MESHNODE_*`` variable except the key passphrase (``child_env``): its settings come from
its own config.toml only. A pid is trusted only when /proc shows a meshnode run of this very
home: a stale pid file whose number was reused is never taken for the child. Blocking; the node
calls these from a worker thread.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Callable, Mapping

from meshnode.base import node_log
from meshnode.base.errors import SpawnError
from meshnode.base.identity.keyfile import PASSPHRASE_ENV
from meshnode.engines.spawn import autostart as units
from meshnode.store.home import running
from meshnode.store.home.running import PID_FILE

POLL_S = 0.05
SCRIPT_TIMEOUT = 30.0
EXEC_SETTLE_S = 1.0  # how long a pid file's process may sit inside exec with no arguments shown
_VALUED = ("--home", "--db", "--key-file", "--log-level")  # the CLI's options that take a value
EXIT_FILE = Path("run") / "node.exit"  # how the last directly started run ended (JSON)
MAX_EXIT_BYTES = 1024
HOLD_WAIT_S = 20.0  # how long a start waits for the child to hold its home (a slow host's imports and key)


def child_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment a child starts with (contract decision 2): no MESHNODE_* variable but
    the key passphrase, so a parent's home, ports or test timers never leak into the child."""
    return {k: v for k, v in environ.items() if not k.startswith("MESHNODE_") or k == PASSPHRASE_ENV}


def launch(home: Path, autostart: str, direct: Callable[[Path], int] | None = None) -> dict:
    """Start the child in ``home``: through systemd when its unit is installed and systemd runs,
    else its start.sh when one was written, else directly (``direct``: how, given the home, the pid
    back; default a detached Popen). Returns ``{"via", "pid", "log"}`` once the child holds its home
    or has ended (``HOLD_WAIT_S`` at most); a child already running is left alone
    (``already_running`` True). SpawnError start_failed."""
    home = Path(os.path.abspath(home))
    pid = running_pid(home)
    log = str(node_log.log_path(home))
    if pid is not None:
        return {"via": "running", "pid": pid, "log": log, "already_running": True}
    unit, system = _usable_unit(home, autostart)
    if unit:
        units.systemctl(system, "start", unit)
        main = units.systemctl(system, "show", "--property=MainPID", "--value", unit).strip()
        ctl = "journalctl" + ("" if system else " --user")
        return {"via": "systemd", "pid": int(main) if main.isdigit() and int(main) > 0 else None,
                "log": f"{ctl} -u {unit}"}
    if (home / "start.sh").is_file():
        done = _script(home, "start.sh")
        if done.returncode != 0:
            raise SpawnError("start_failed", f"{home / 'start.sh'} failed: {(done.stderr or done.stdout).strip()}"[:600])
        pid = running_pid(home)  # its pid file may not be written yet: found by its command line
        _wait_held(home, pid)
        return {"via": "script", "pid": running.holder(home) or pid, "log": log}
    pid = (direct or _popen)(home)
    _wait_held(home, pid)
    return {"via": "direct", "pid": pid, "log": log}


def stop(home: Path, autostart: str, timeout: float = 10.0) -> bool:
    """Stop the child: ``systemctl stop`` for a usable unit, else ``running.stop`` (what ``meshnode
    stop`` does: SIGTERM to the pid the home's lock vouches for, SIGKILL after ``timeout`` seconds).
    True when it ran and was stopped, False when it was not running. MeshnodeError stop_failed, no_pid."""
    home = Path(os.path.abspath(home))
    unit, system = _usable_unit(home, autostart)
    if unit:
        was = running_pid(home) is not None
        units.systemctl(system, "stop", unit)
        return was
    done = running.stop(home, timeout)
    if done is None:
        return False
    _note_stopped(home, done.pid, done.how)
    return True


def direct_argv(home: Path) -> list[str]:
    """The command line of a child started directly (``_is_run_of`` recognizes it): detached, as
    ``meshnode start`` runs a node, so its records go to its log file alone, not to its console too."""
    return [sys.executable, "-m", "meshnode", "--home", str(home), "run", "--detached"]


def prepare_direct(home: Path) -> Path:
    """Before a direct start: the folders made, the last run's exit record gone; the console file
    the child's stdout and stderr go to (``logs/console.log``, emptied, as ``meshnode start`` does:
    the child's own run rotates ``logs/node.log``, and what a child printed there would be rotated
    away under its feet)."""
    console = home / node_log.CONSOLE_FILE
    console.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / PID_FILE).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / EXIT_FILE).unlink(missing_ok=True)
    return console


def exit_record(pid: int, returncode: int, ended_ms: int) -> dict:
    """How a process ended, as ``run/node.exit`` holds it: ``code`` for an exit, ``signal`` (its name)
    when a signal ended it (a negative return code, as subprocess and trio give it)."""
    rec = {"pid": pid, "ended_ms": ended_ms}
    if returncode < 0:
        try:
            rec["signal"] = signal.Signals(-returncode).name
        except ValueError:
            rec["signal"] = f"signal {-returncode}"
    else:
        rec["code"] = returncode
    return rec


def write_exit(home: Path, rec: dict) -> None:
    """The parent that waited on the child records how it ended (replacing a stop's note)."""
    tmp = home / EXIT_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, home / EXIT_FILE)


def _note_stopped(home: Path, pid: int, how: str) -> None:
    """``stop`` of a child whose exit status only its parent process can know: note the signal sent,
    unless that parent (a running node) wrote the exit already; its record replaces this one."""
    rec = {"pid": pid, "ended_ms": int(time.time() * 1000), "stopped_by": how}
    try:
        fd = os.open(home / EXIT_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(rec, sort_keys=True) + "\n")


def process_state(home: Path) -> dict:
    """The child's process as seen from its home: ``{"running": True, "pid"}`` or ``{"running":
    False, "exit": the exit record or None}`` (None: never started here, or ended unrecorded)."""
    pid = running_pid(Path(home))
    if pid is not None:
        return {"running": True, "pid": pid}
    try:
        raw = (Path(home) / EXIT_FILE).read_bytes()[:MAX_EXIT_BYTES]
        rec = json.loads(raw)
    except (OSError, ValueError):
        rec = None
    return {"running": False, "exit": rec if isinstance(rec, dict) else None}


def describe(state: dict) -> str:
    """A person's words for ``process_state`` (18 characters at most): ``running``, ``stopped (exit
    0)``, ``stopped (SIGKILL)`` (what its parent saw), ``stopped (killed)`` (``stop`` had to kill
    it), else ``stopped``."""
    if state.get("running"):
        return "running"
    rec = state.get("exit") or {}
    if isinstance(rec.get("code"), int):
        return f"stopped (exit {min(max(rec['code'], 0), 999)})"
    if rec.get("signal"):
        return f"stopped ({str(rec['signal'])[:8]})"
    return "stopped (killed)" if rec.get("stopped_by") == "SIGKILL" else "stopped"


def running_pid(home: Path) -> int | None:
    """The pid of the meshnode run of ``home``: the pid file's when that process is one, else
    any process running it (started by systemd, or by hand)."""
    home = Path(os.path.abspath(home))
    try:
        pid = int((home / PID_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        pid = None
    if pid is not None and pid > 0 and _runs_home(pid, home, settle=EXEC_SETTLE_S):
        return pid
    return _find(home)


def log_tail(home: Path, lines: int = 20) -> str:
    """What a failed start shows: the last ``lines`` lines of the child's console
    (``<home>/logs/console.log``: why it stopped, a traceback), else of its log file ("" when
    neither has any)."""
    for path in (Path(home) / node_log.CONSOLE_FILE, node_log.log_path(home)):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                tail = "".join(deque(fh, maxlen=max(0, int(lines))))
        except OSError:
            continue
        if tail.strip():
            return tail
    return ""


def _wait_held(home: Path, pid: int | None, timeout: float = HOLD_WAIT_S) -> None:
    """Until the child just started holds its home (its pid file written: ``stop`` finds it), or its
    process ``pid`` no longer runs it (ended: the caller tells why), at most ``timeout`` seconds (a
    slow start is left to go on). Never reaps: a running parent's waiter does (processes.py)."""
    deadline = time.monotonic() + timeout
    while running.holder(home) is None:
        if not pid or not _runs_home(pid, home, settle=EXEC_SETTLE_S) or time.monotonic() >= deadline:
            return
        time.sleep(POLL_S)


def _popen(home: Path) -> int:
    """Start the child detached from this (short-lived) process: once it exits, init reaps the child."""
    argv = direct_argv(home)
    with open(prepare_direct(home), "wb") as console:
        try:
            proc = subprocess.Popen(argv, cwd=home, env=child_env(), stdin=subprocess.DEVNULL, stdout=console,
                                    stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        except OSError as exc:
            raise SpawnError("start_failed", f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    return proc.pid


def _script(home: Path, name: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(home / name)], cwd=home, env=child_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SpawnError("start_failed", f"{home / name}: {exc}"[:300]) from None


def _usable_unit(home: Path, autostart: str) -> tuple[str | None, bool]:
    """(the systemd unit installed for ``home``, whether it is a system unit), the unit None unless
    ``autostart`` is a systemd one, its file is still there and systemd runs here."""
    record = units.installed(home)
    system = record.get("kind") == "systemd-system"
    if (autostart.startswith("systemd") and record.get("unit")
            and any(os.path.exists(f) for f in record.get("files", [])) and units.systemd_usable(system=system)):
        return record["unit"], system
    return None, system


def _cmdline(pid: int, settle: float = 0.0) -> list[str] | None:
    """The process's arguments; None when /proc cannot tell (not Linux); [] when it is gone or a
    zombie. A process caught inside exec (its parent resumes before the kernel sets the new
    arguments) shows none for a moment: with ``settle``, wait up to that long for them."""
    deadline = time.monotonic() + settle
    while True:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            return [] if Path("/proc/self/cmdline").exists() else None
        except OSError:
            return []
        if raw or time.monotonic() >= deadline or _zombie(pid):
            return [os.fsdecode(a) for a in raw.split(b"\0") if a]
        time.sleep(0.01)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])


def _runs_home(pid: int, home: Path, settle: float = 0.0) -> bool:
    args = _cmdline(pid, settle)
    if args is None:  # no /proc: alive is the best we can tell
        return _alive(pid)
    return _is_run_of(args, home)


def _alive(pid: int) -> bool:
    """Signal 0 reaches ``pid`` (a process we may not signal exists all the same)."""
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def exited(pid: int | None) -> bool:
    """The process started directly has ended (reaped when it is ours: a zombie is no node)."""
    if not pid:
        return False
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    except ChildProcessError:  # not our child (the node started it, or it was reaped): ask the kernel
        return not _alive(pid)


def _is_run_of(args: list[str], home: Path) -> bool:
    """``... meshnode [options] run [options]`` with ``--home`` naming ``home``."""
    start = next((i for i, a in enumerate(args) if a == "meshnode" or a.endswith("/meshnode")), None)
    if start is None:
        return False
    command, homes, rest = None, [], iter(args[start + 1:])
    for arg in rest:
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            value = value if eq else next(rest, "")
            if name == "--home":
                homes.append(value)
        elif not arg.startswith("-") and command is None:
            command = arg
    return command == "run" and bool(homes) and os.path.abspath(homes[-1]) == str(home)


def _find(home: Path) -> int | None:
    """Any process running this home (/proc scan; None without /proc)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if entry.isdigit() and int(entry) != os.getpid():
            args = _cmdline(int(entry))
            if args and _is_run_of(args, home):
                return int(entry)
    return None
