"""The sandbox every agent command runs in: new namespaces, its own root, rlimits, an unprivileged uid.

    node --fork--> supervisor (root)            --fork--> command: PID 1 of a new PID namespace:
                   unshare(PID, IPC, NS[, NET])           mounts.build_root, rlimits, uid 65534,
                                                          no_new_privs, chdir /workspace, exec

The supervisor is the child ``subprocess`` forks; in ``preexec_fn`` it makes the
namespaces, forks the command and only waits for it, passing on its exit status.
It also watches the node through a pidfd: when the node dies (even by SIGKILL),
it kills the command and exits, so nothing outlives a crash. (A parent-death
signal would not do: trio forks from a worker thread, and that signal fires when
the thread ends, not the node.) Each running sandbox is recorded in a folder
(``remember``/``forget``) so that a node restarting after a crash in which its
supervisors could not act (stopped, or also killed) can kill what was left
(``kill_leftovers``), checking each pid's start time so a reused pid is spared.
As the init of its own PID namespace, the command takes every process it started
(``&`` jobs, fork bombs, children that called ``setsid``) down with it when it
exits or is killed, and the kernel reaps them all. The price: like any PID 1 it
ignores signals it has no handler for (SIGTERM, SIGXCPU, SIGPIPE), so the CPU
limit bites with the hard limit's SIGKILL and writing to a closed pipe is EPIPE.
The IPC namespace keeps it away from the host's System V IPC and POSIX message
queues; the network namespace, made unless the policy allows the network, leaves
it no network at all. rlimits bound its CPU time, processes, file size, open
files and memory, and forbid core dumps.

The mount namespace gives the command a file system of its own
(``meshnode.engines.gate.mounts``): read-only system trees and a few files of /etc, a
handful of devices, its own /proc (its processes only), private /tmp and
/dev/shm, and its folder at ``/workspace``, its working directory (relative
paths work as before; absolute ones inside the folder are /workspace/...). No
other host file, process, socket or command folder is reachable. The command
builds it as PID 1, before it gives up its privileges, so the fresh /proc is
that of its PID namespace.

As root the command drops to ``run_as_uid`` (65534 by default), which is what
makes RLIMIT_NPROC real; the caller must make the folder usable by that uid
(chown it, or mode 0o777), else ``bad_workspace`` (its parents need not be
reachable: the folder is bound into the new root). Without root the namespaces
come from an unprivileged user namespace. Where any of it cannot be made (no
user namespaces, a kernel or container refusing a mount), commands are refused
(``no_isolation``) rather than run unconfined.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import pwd
import resource
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol

import trio

from meshnode.engines.gate import GateError, mounts

CHILD_PATH = "/usr/bin:/bin"
NOBODY_UID = 65534
OPEN_FILES = 256

_REAP_GRACE_S = 5.0
_BACKSTOP_MARGIN_S = 30

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)


def _checked(result: int) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _unshare(flags: int) -> None:
    _checked(_libc.unshare(ctypes.c_int(flags)))


def _prctl(option: int, value: int) -> None:
    _checked(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0),
                         ctypes.c_ulong(0), ctypes.c_ulong(0)))


class Limits(Protocol):
    """What the sandbox reads from a policy (``runner.CommandPolicy`` has all of it)."""

    @property
    def timeout_s(self) -> float: ...
    @property
    def cpu_seconds(self) -> int: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def max_processes(self) -> int: ...
    @property
    def max_file_bytes(self) -> int: ...
    @property
    def network(self) -> bool: ...
    @property
    def run_as_uid(self) -> int | None: ...


@dataclass(frozen=True)
class _Sandbox:
    """The ``preexec_fn``: runs in the forked child, between fork and exec.

    Only plain os/resource/ctypes calls here and in ``mounts`` (no trio, no locks). The first
    process becomes the supervisor and never returns from this function; its
    child returns and is exec'd by subprocess as the command.
    """

    cwd: str
    flags: int
    userns: bool
    drop_to: tuple[int, int] | None  # (uid, gid) when the node is root
    limits: tuple[tuple[int, int], ...]
    memory_bytes: int
    tmp_bytes: int
    network: bool
    status_fd: int
    backstop_s: int
    node_pid: int
    read_only: tuple[str, ...] = ()  # host folders shown read-only at the same path (a long-lived MCP server's)

    def __call__(self) -> None:
        stage = "namespaces"
        try:
            node_fd = _pidfd(self.node_pid)
            if os.getppid() != self.node_pid:  # the node died before we could watch it
                os._exit(1)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the supervisor is a copy of the node
            uid, gid = os.geteuid(), os.getegid()
            _unshare(self.flags)
            if self.userns:
                for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                                   ("gid_map", f"{gid} {gid} 1")):
                    with open(f"/proc/self/{name}", "w") as file:
                        file.write(text)
            os.chdir("/")  # so the command's pivot_root moves our cwd into its root too
            stage = "fork"
            child = os.fork()
        except BaseException as exc:
            self._report(stage, exc)
            raise
        if child:
            self._supervise(child, node_fd)
        if node_fd is not None:
            os.close(node_fd)
        self._become_command()

    def _report(self, stage: str, exc: BaseException) -> None:
        number = exc.errno if isinstance(exc, OSError) and exc.errno else 0
        step = "".join(getattr(exc, "step", "").split())
        with contextlib.suppress(OSError):
            os.write(self.status_fd, f"fail {stage} {number} {step}".strip().encode() + b"\n")

    def _supervise(self, child: int, node_fd: int | None) -> NoReturn:
        code = 255
        try:
            os.write(self.status_fd, b"pid %d\n" % child)
            _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(b"gate-supervisor"), 0, 0, 0)
            # Drop every inherited descriptor but the node's pidfd, the pipes and subprocess's
            # exec-status pipe included, so the node sees EOF exactly when the command has them closed.
            keep = -1 if node_fd is None else node_fd
            os.closerange(0, max(keep, 0))
            os.closerange(keep + 1, 2**31 - 1)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(self.backstop_s)  # a last resort: the command's time is up
            if not self._wait_unless_node_dies(child, node_fd):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGKILL)  # PID 1 of its namespace: everything in it goes
            _, status = os.waitpid(child, 0)
            if os.WIFSIGNALED(status):
                number = os.WTERMSIG(status)
                code = 128 + number
                with contextlib.suppress(Exception):
                    signal.signal(number, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
                os.kill(os.getpid(), number)  # report the same death to the node
            else:
                code = os.waitstatus_to_exitcode(status)
        finally:
            os._exit(code)

    def _wait_unless_node_dies(self, child: int, node_fd: int | None) -> bool:
        """True once the command has exited (not yet reaped); False as soon as the node is gone."""
        child_fd = _pidfd(child)
        if node_fd is not None and child_fd is not None:
            watch = select.poll()
            watch.register(node_fd, select.POLLIN)
            watch.register(child_fd, select.POLLIN)
            while True:
                ready = {fd for fd, _ in watch.poll()}
                if child_fd in ready:
                    return True
                if node_fd in ready:
                    return False
        while True:  # no pidfds (a kernel before 5.3): look twice a second
            if os.waitid(os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            if os.getppid() != self.node_pid:
                return False
            time.sleep(0.5)

    def _become_command(self) -> None:
        stage = "mounts"
        try:
            mounts.build_root(self.cwd, self.tmp_bytes, self.network, self.read_only)  # needs our privileges: before the drop
            stage = "limits"
            for kind, value in self.limits:
                resource.setrlimit(kind, (value, value))
            if self.drop_to is not None:
                stage = "drop_privileges"
                uid, gid = self.drop_to
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
                if os.getuid() != uid or os.geteuid() != uid:
                    raise OSError(1, "uid did not change")
            stage = "no_new_privs"
            _prctl(_PR_SET_NO_NEW_PRIVS, 1)
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it
            stage = "workspace"
            os.chdir(mounts.WORKSPACE)
            stage = "limits"
            # Last: this process is still a copy of the (large) node until exec.
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        except BaseException as exc:
            self._report(stage, exc)
            raise
        os.close(self.status_fd)


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (close-on-exec); None where the
    kernel has no pidfds."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _identity(policy: Limits) -> tuple[int, int] | None:
    """(uid, gid) to drop to when root; None when the node is not root (no switch possible)."""
    euid, uid = os.geteuid(), policy.run_as_uid
    if euid != 0:
        if uid not in (None, euid):
            raise GateError("no_isolation", f"the node runs as uid {euid} and cannot switch to uid {uid}; "
                            "run the node as root or leave run_as_uid unset")
        return None
    uid = NOBODY_UID if uid is None else uid
    with contextlib.suppress(KeyError):
        return uid, pwd.getpwuid(uid).pw_gid
    return uid, uid


def _read_status(fd: int) -> tuple[int | None, tuple[str, int, str] | None]:
    """The sandbox's reports: (command pid, first failure). Every writer is closed by now."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            data += chunk
    pid, fail = None, None
    for kind, *rest in (line.split() for line in data.decode(errors="replace").splitlines()):
        if kind == "pid":
            pid = int(rest[0])
        elif kind == "fail" and fail is None:
            fail = (rest[0], int(rest[1]), " ".join(rest[2:]))
    return pid, fail


def _spawn_error(exc: BaseException, fail: tuple[str, int, str] | None, program: str,
                 cwd: str, ident: tuple[int, int] | None) -> GateError:
    who = f"uid {ident[0]}" if ident else "the node's user"
    if fail is not None:
        stage, number, step = fail
        why = os.strerror(number) if number else str(exc)
        if stage == "namespaces":
            return GateError("no_isolation", f"cannot create the namespaces that isolate the command "
                             f"({why}); refusing to run it unconfined")
        if stage == "mounts":
            return GateError("no_isolation", f"cannot give the command its own file system ({why} at "
                             f"{step or 'an unknown step'}); refusing to run it unconfined")
        if stage == "drop_privileges":
            return GateError("no_isolation", f"cannot drop privileges to {who} ({why})")
        if stage == "workspace":
            return GateError("bad_workspace", f"{who} cannot enter the workspace {cwd} ({why}); "
                             "make it usable by that uid (chown it, or chmod 0o777)")
        return GateError("spawn_failed", f"could not prepare '{program}' ({stage}: {why})")
    if isinstance(exc, BlockingIOError):
        return GateError("spawn_failed", f"could not start '{program}': too many processes already run "
                         f"as {who} (the process limit)")
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if isinstance(exc, FileNotFoundError):
        why += (f" inside the sandbox, whose root holds only /{', /'.join(mounts.READ_ONLY_TREES)}, "
                "a few files of /etc and the workspace")
    return GateError("spawn_failed", f"could not start '{program}' as {who}: {why}")


def _within_hard_limit(kind: int, value: int) -> int:
    """``value``, or the node's own hard limit if that is lower (an unprivileged node cannot raise it)."""
    hard = resource.getrlimit(kind)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


async def spawn(exe: list[str], cwd: str, policy: Limits,
                stdin: bytes, env: dict[str, str] | None = None, *, interactive: bool = False,
                read_only: tuple[str, ...] = ()) -> tuple[trio.Process, int]:
    """Start ``exe`` in ``cwd`` in a new sandbox: (the supervisor, the command's pid); GateError if
    it cannot be isolated or started. ``interactive``: its stdin stays a pipe the caller writes (a
    stdio MCP server); ``read_only``: host folders it also sees, read-only, at the same paths."""
    ident = _identity(policy)
    flags = _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWNS | (0 if policy.network else _CLONE_NEWNET)
    userns = os.geteuid() != 0
    limits = tuple((kind, _within_hard_limit(kind, value)) for kind, value in (
        (resource.RLIMIT_CPU, policy.cpu_seconds),
        (resource.RLIMIT_NPROC, policy.max_processes),
        (resource.RLIMIT_FSIZE, policy.max_file_bytes),
        (resource.RLIMIT_NOFILE, OPEN_FILES),
        (resource.RLIMIT_CORE, 0),
    ))
    read_fd, write_fd = os.pipe()
    sandbox = _Sandbox(cwd=cwd, flags=flags | (_CLONE_NEWUSER if userns else 0), userns=userns,
                       drop_to=ident, limits=limits,
                       memory_bytes=_within_hard_limit(resource.RLIMIT_AS, policy.memory_bytes),
                       tmp_bytes=min(policy.memory_bytes, mounts.MAX_TMP_BYTES), network=policy.network,
                       status_fd=write_fd, node_pid=os.getpid(),
                       backstop_s=min(math.ceil(policy.timeout_s) + _BACKSTOP_MARGIN_S, 2**31 - 1),
                       read_only=tuple(read_only))
    try:
        try:
            proc = await trio.lowlevel.open_process(
                exe, stdin=subprocess.PIPE if stdin or interactive else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**(env or {}), "PATH": CHILD_PATH, "HOME": mounts.WORKSPACE, "LANG": "C.UTF-8"},
                close_fds=True, start_new_session=True, restore_signals=True, preexec_fn=sandbox)
        finally:
            os.close(write_fd)
        leader, _ = _read_status(read_fd)
    except (OSError, subprocess.SubprocessError) as exc:
        raise _spawn_error(exc, _read_status(read_fd)[1], exe[0], cwd, ident) from None
    finally:
        os.close(read_fd)
    if leader is None:  # cannot happen unless the supervisor broke; never leave it running
        with trio.CancelScope(shield=True):
            await stop(proc, None)
        raise GateError("spawn_failed", f"the sandbox for '{exe[0]}' did not report its command process")
    return proc, leader


async def stop(proc: trio.Process, leader: int | None) -> None:
    """Kill the command (PID 1 of its namespace, so the kernel kills the rest) and reap the supervisor.

    ``leader`` is signalled only while the supervisor is alive: until then it has
    not been reaped, or was reaped an instant ago; pids are handed out cyclically,
    so its number cannot belong to anyone else yet.
    """
    if proc.returncode is None and leader is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(leader, signal.SIGKILL)
        with trio.move_on_after(_REAP_GRACE_S):
            await proc.wait()
    if proc.returncode is None:  # last resort: the whole session's process group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            await stream.aclose()


# --- records of running sandboxes, for the start after a crash -------------------------------


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), which
    tells a process from a later one given the same pid; None when there is none (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            fields = file.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] == b"Z":
        return None
    return int(fields[19])


def remember(folder: Path, supervisor: int, command: int) -> Path | None:
    """Record a running sandbox (its supervisor's and command's pids and start times) in ``folder``,
    which only the node's user can write; None if it cannot be recorded (logged by the caller)."""
    record = {"supervisor": [supervisor, _start_time(supervisor)], "command": [command, _start_time(command)]}
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / f"sandbox-{supervisor}.json"
        path.write_text(json.dumps(record))
        return path
    except OSError:
        return None


def forget(path: Path | None) -> None:
    """Drop a record; its folder too once empty (no folder is left behind by commands that ended)."""
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def kill_leftovers(folder: Path) -> list[int]:
    """Kill the sandboxes recorded in ``folder`` that still run (by a crash of the node that could
    not take them along): each pid only while its start time is the recorded one. Every record
    is removed; returns the pids killed."""
    killed = []
    if not folder.is_dir():
        return killed
    for path in folder.glob("sandbox-*.json"):
        try:
            record = json.loads(path.read_text()[:1000])
            pairs = [(int(record[k][0]), int(record[k][1])) for k in ("command", "supervisor")
                     if record[k][1] is not None]
        except (OSError, ValueError, TypeError, KeyError, IndexError):
            pairs = []  # not one of ours as written: nothing is killed on its word
        for pid, started in pairs:
            if pid > 1 and _start_time(pid) == started:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        forget(path)
    return killed
