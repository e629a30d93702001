"""Running a command for the cognitive agent: an allowlist, no shell, limits, a sandbox.

Nothing is ever parsed by a shell (seed 004's naive version greps a string for
"rm -rf" and uses ``shell=True``): the agent gives an argv list, the program
must be on the allowlist by name (a path such as ``/bin/sh`` is refused), and
the arguments reach it verbatim, so ``; | && $() ` > <`` are ordinary bytes.

    node --fork--> supervisor (root)        --fork--> command: PID 1 of a new PID namespace,
                   unshare(PID, IPC[, NET])           rlimits, uid 65534, no_new_privs, chdir, exec

The supervisor is the child ``subprocess`` forks; in ``preexec_fn`` it makes the
namespaces, forks the command and only waits for it, passing on its exit status.
As the init of its own PID namespace, the command takes every process it started
(``&`` jobs, fork bombs, children that called ``setsid``) down with it when it
exits or is killed, and the kernel reaps them all. The price: like any PID 1 it
ignores signals it has no handler for (SIGTERM, SIGXCPU, SIGPIPE), so the CPU
limit bites with the hard limit's SIGKILL and writing to a closed pipe is EPIPE.

As root the command drops to ``run_as_uid`` (65534 by default), which is what
makes RLIMIT_NPROC real; the caller must make the workspace usable by that uid
(chown it, or mode 0o777), else ``bad_workspace``. Without root the namespaces
come from an unprivileged user namespace; where that is forbidden, commands are
refused (``no_isolation``) rather than run unconfined.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import pwd
import re
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import NoReturn

import trio

from meshnode.gate import GateError

CHILD_PATH = "/usr/bin:/bin"
SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"  # where policy_from_config looks, never the node's own PATH
NOBODY_UID = 65534
MAX_ARG_BYTES = 32 * 1024
MAX_ARGV_BYTES = 256 * 1024
OPEN_FILES = 256
FLOOD_FACTOR = 64  # output beyond FLOOD_FACTOR * max_output_bytes on one stream: stop the command

_READ_CHUNK = 64 * 1024
_DRAIN_GRACE_S = 2.0
_REAP_GRACE_S = 5.0
_BACKSTOP_MARGIN_S = 30

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


# Read-mostly tools from Debian's coreutils, findutils, diffutils and grep, plus
# python3 (the agent computes with it; the sandbox, not the argument filter, is
# the boundary, so python3 is no riskier than ls inside it) and sleep (harmless,
# bounded by the timeout). Deliberately absent: shells, env, xargs, nice, timeout
# and nohup (they run other programs, bypassing the allowlist), network clients,
# and rm/mv/cp/editors (file changes go through the gate's drafts).
DEFAULT_PROGRAMS: tuple[str, ...] = (
    "ls", "cat", "head", "tail", "wc", "grep", "find", "diff", "sort", "uniq",
    "python3", "echo", "true", "false", "sleep",
)

# Per-argument filters: options that run other programs or write files. They are
# defence in depth only; one argument at a time cannot see positional meanings
# (``uniq IN OUT`` writes OUT).
DEFAULT_DENY_ARGS: Mapping[str, tuple[str, ...]] = {
    "find": (r"^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$",),
    "sort": (r"^-[a-zA-Z]*o", r"^--o", r"^--co"),  # -o/--output FILE, --compress-program=PROG
}


@dataclass(frozen=True)
class ProgramRule:
    """One allowed program: the name the agent uses and the executable it means."""

    name: str
    path: str
    deny_args: tuple[str, ...] = ()
    max_args: int = 64

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or not os.path.isabs(self.path):
            raise GateError("bad_policy", f"program rule {self.name!r} -> {self.path!r}: "
                            "give a bare name and an absolute executable path")
        for pattern in self.deny_args:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise GateError("bad_policy", f"deny pattern {pattern!r} for '{self.name}' "
                                f"is not a valid regex: {exc}") from None
        if self.max_args < 0:
            raise GateError("bad_policy", f"max_args for '{self.name}' must be >= 0")


@dataclass(frozen=True)
class CommandPolicy:
    """The allowlist and the limits every command runs under."""

    programs: Mapping[str, ProgramRule]
    timeout_s: float = 30.0
    max_output_bytes: int = 256 * 1024
    cpu_seconds: int = 10
    memory_bytes: int = 512 * 1024 * 1024
    max_processes: int = 64
    max_file_bytes: int = 64 * 1024 * 1024
    network: bool = False
    run_as_uid: int | None = None

    def __post_init__(self) -> None:
        for name, rule in self.programs.items():
            if not isinstance(rule, ProgramRule) or rule.name != name:
                raise GateError("bad_policy", f"programs[{name!r}] must be a ProgramRule named {name!r}")
        if not isinstance(self.timeout_s, (int, float)) or not 0 < self.timeout_s < math.inf:
            raise GateError("bad_policy", f"timeout_s must be a positive number, not {self.timeout_s!r}")
        for key in ("max_output_bytes", "cpu_seconds", "memory_bytes", "max_processes", "max_file_bytes"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise GateError("bad_policy", f"{key} must be a positive integer, not {value!r}")
        if not isinstance(self.network, bool):
            raise GateError("bad_policy", f"network must be true or false, not {self.network!r}")
        if self.run_as_uid is not None and (not isinstance(self.run_as_uid, int) or self.run_as_uid <= 0):
            raise GateError("bad_policy", f"run_as_uid must be an unprivileged uid such as {NOBODY_UID}, "
                            f"not {self.run_as_uid!r}; agent commands never run as root")


def policy_from_config(programs: Iterable[str], **limits: object) -> CommandPolicy:
    """A policy allowing ``programs`` (names, looked up in SEARCH_PATH now) under ``limits``."""
    known = {f.name for f in fields(CommandPolicy)} - {"programs"}
    unknown = sorted(set(limits) - known)
    if unknown:
        raise GateError("bad_policy", f"unknown command limit(s) {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(known))}")
    rules: dict[str, ProgramRule] = {}
    for name in programs:
        if not isinstance(name, str) or not name or "/" in name or "\0" in name:
            raise GateError("no_program", f"{name!r} is not a program name; give a bare name such as 'ls'")
        path = shutil.which(name, path=SEARCH_PATH)
        if path is None:
            raise GateError("no_program", f"'{name}' is not installed in {SEARCH_PATH}; install it "
                            "or remove it from the allowed programs")
        rules[name] = ProgramRule(name, os.path.abspath(path), DEFAULT_DENY_ARGS.get(name, ()))
    return CommandPolicy(programs=rules, **limits)  # type: ignore[arg-type]


def _shown(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def check_command(argv: Sequence[str], policy: CommandPolicy) -> list[str]:
    """The argv to execute (program replaced by its absolute path), or GateError.

    There is no shell: shell metacharacters are passed to the program as plain
    argument bytes, so ``["echo", "a; rm -rf x"]`` prints ``a; rm -rf x``.
    """
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise GateError("bad_argument", "give the command as a list of arguments, e.g. ['ls', '-l']; "
                        "a command line string is never split or run by a shell")
    if not argv:
        raise GateError("bad_argument", "the command is empty; give at least a program name")
    for index, arg in enumerate(argv):
        if not isinstance(arg, str):
            raise GateError("bad_argument", f"argument {index} is a {type(arg).__name__}, not a string")
        if "\0" in arg:
            raise GateError("bad_argument", f"argument {index} contains a NUL byte")
    name, args = argv[0], list(argv[1:])
    allowed = ", ".join(sorted(policy.programs)) or "(none)"
    if "/" in name:
        raise GateError("not_allowed", f"'{_shown(name)}' is a path; name an allowed program instead: {allowed}")
    rule = policy.programs.get(name)
    if rule is None:
        raise GateError("not_allowed", f"'{_shown(name)}' is not an allowed program; allowed: {allowed}")
    if len(args) > rule.max_args:
        raise GateError("bad_argument", f"'{name}' takes at most {rule.max_args} arguments, got {len(args)}")
    total = 0
    for arg in args:
        try:
            size = len(os.fsencode(arg))
        except UnicodeEncodeError:
            raise GateError("bad_argument", f"argument '{_shown(arg)}' cannot be encoded") from None
        if size > MAX_ARG_BYTES:
            raise GateError("bad_argument", f"an argument of {size} bytes is longer than {MAX_ARG_BYTES}; "
                            "put long input on stdin or in a file")
        total += size
        for pattern in rule.deny_args:
            if re.search(pattern, arg):
                raise GateError("bad_argument", f"'{name}' may not be given '{_shown(arg)}' "
                                f"(refused by the pattern {pattern!r})")
    if total > MAX_ARGV_BYTES:
        raise GateError("bad_argument", f"the arguments total {total} bytes, more than {MAX_ARGV_BYTES}")
    return [rule.path, *args]


def _clip(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    marker = f"\n[... {len(text) - budget} characters omitted ...]\n"
    if budget <= len(marker) + 2:
        return text[:budget]
    keep = budget - len(marker)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head):]


@dataclass
class CommandResult:
    """What a command did. Its own failures (exit code, a limit) are data here, never exceptions."""

    argv: list[str]
    exit_code: int | None  # None when a signal ended it
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    killed: str | None  # why it was stopped: "timeout", "output flood ...", "signal 9 (...)"
    duration_s: float

    def summary(self, max_chars: int = 4000) -> dict[str, object]:
        """A JSON-able view for the LLM; output decoded leniently, head and tail kept within max_chars."""
        out = self.stdout.decode("utf-8", errors="replace")
        err = self.stderr.decode("utf-8", errors="replace")
        err_budget = min(len(err), max(max_chars - len(out), max_chars // 4))
        out_budget = max(0, max_chars - err_budget)
        return {
            "argv": list(self.argv),
            "exit_code": self.exit_code,
            "killed": self.killed,
            "timed_out": self.timed_out,
            "duration_s": round(self.duration_s, 3),
            "stdout": _clip(out, out_budget),
            "stderr": _clip(err, err_budget),
            "stdout_truncated": self.stdout_truncated or len(out) > out_budget,
            "stderr_truncated": self.stderr_truncated or len(err) > err_budget,
        }


_SIGNAL_HINTS = {signal.SIGKILL: "the CPU limit, or the OOM killer", signal.SIGXCPU: "the CPU limit",
                 signal.SIGXFSZ: "the file size limit", signal.SIGSEGV: "a crash, maybe the memory limit",
                 signal.SIGABRT: "aborted, maybe the memory limit"}


def _describe_signal(number: int) -> str:
    name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else "?"
    hint = _SIGNAL_HINTS.get(number)  # type: ignore[call-overload]
    return f"signal {number} ({name}: {hint}?)" if hint else f"signal {number} ({name})"


@dataclass(frozen=True)
class _Sandbox:
    """The ``preexec_fn``: runs in the forked child, between fork and exec.

    Only plain os/resource/ctypes calls here (no trio, no locks). The first
    process becomes the supervisor and never returns from this function; its
    child returns and is exec'd by subprocess as the command.
    """

    cwd: str
    flags: int
    userns: bool
    drop_to: tuple[int, int] | None  # (uid, gid) when the node is root
    limits: tuple[tuple[int, int], ...]
    memory_bytes: int
    status_fd: int
    backstop_s: int

    def __call__(self) -> None:
        stage = "namespaces"
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the supervisor is a copy of the node
            uid, gid = os.geteuid(), os.getegid()
            _unshare(self.flags)
            if self.userns:
                for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                                   ("gid_map", f"{gid} {gid} 1")):
                    with open(f"/proc/self/{name}", "w") as file:
                        file.write(text)
            stage = "fork"
            child = os.fork()
        except BaseException as exc:
            self._report(stage, exc)
            raise
        if child:
            self._supervise(child)
        self._become_command()

    def _report(self, stage: str, exc: BaseException) -> None:
        number = exc.errno if isinstance(exc, OSError) and exc.errno else 0
        with contextlib.suppress(OSError):
            os.write(self.status_fd, f"fail {stage} {number}\n".encode())

    def _supervise(self, child: int) -> NoReturn:
        code = 255
        try:
            os.write(self.status_fd, b"pid %d\n" % child)
            _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(b"gate-supervisor"), 0, 0, 0)
            # Drop every inherited descriptor, the pipes and subprocess's exec-status
            # pipe included, so the node sees EOF exactly when the command has them closed.
            os.closerange(0, 2**31 - 1)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(self.backstop_s)  # if the node dies, this ends us and the command
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

    def _become_command(self) -> None:
        stage = "limits"
        try:
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
            os.chdir(self.cwd)
            stage = "limits"
            # Last: this process is still a copy of the (large) node until exec.
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        except BaseException as exc:
            self._report(stage, exc)
            raise
        os.close(self.status_fd)


def _identity(policy: CommandPolicy) -> tuple[int, int] | None:
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


def _read_status(fd: int) -> tuple[int | None, tuple[str, int] | None]:
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
            fail = (rest[0], int(rest[1]))
    return pid, fail


def _spawn_error(exc: BaseException, fail: tuple[str, int] | None, program: str,
                 cwd: str, ident: tuple[int, int] | None) -> GateError:
    who = f"uid {ident[0]}" if ident else "the node's user"
    if fail is not None:
        stage, number = fail
        why = os.strerror(number) if number else str(exc)
        if stage == "namespaces":
            return GateError("no_isolation", f"cannot create the namespaces that isolate the command "
                             f"({why}); refusing to run it unconfined")
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
    return GateError("spawn_failed", f"could not start '{program}' as {who}: {why}")


def _within_hard_limit(kind: int, value: int) -> int:
    """``value``, or the node's own hard limit if that is lower (an unprivileged node cannot raise it)."""
    hard = resource.getrlimit(kind)[1]
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


async def _spawn(exe: list[str], cwd: str, policy: CommandPolicy,
                 stdin: bytes) -> tuple[trio.Process, int]:
    ident = _identity(policy)
    flags = _CLONE_NEWPID | _CLONE_NEWIPC | (0 if policy.network else _CLONE_NEWNET)
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
                       status_fd=write_fd,
                       backstop_s=min(math.ceil(policy.timeout_s) + _BACKSTOP_MARGIN_S, 2**31 - 1))
    try:
        try:
            proc = await trio.lowlevel.open_process(
                exe, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env={"PATH": CHILD_PATH, "HOME": cwd, "LANG": "C.UTF-8"},
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
            await _stop(proc, None)
        raise GateError("spawn_failed", f"the sandbox for '{exe[0]}' did not report its command process")
    return proc, leader


async def _stop(proc: trio.Process, leader: int | None) -> None:
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


@dataclass
class _Capture:
    """One output stream: the first ``limit`` bytes kept, the rest counted and dropped."""

    limit: int
    chunks: list[bytes] = field(default_factory=list)
    kept: int = 0
    seen: int = 0

    def add(self, data: bytes) -> None:
        self.seen += len(data)
        room = self.limit - self.kept
        if room > 0:
            self.chunks.append(data[:room])
            self.kept += min(room, len(data))


async def _drain(stream: trio.abc.ReceiveStream | None, capture: _Capture,
                 on_flood: Callable[[], None]) -> None:
    if stream is None:
        return
    with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
        while data := await stream.receive_some(_READ_CHUNK):
            capture.add(data)  # keep reading past the cap: a full pipe must never block the child
            if capture.seen > capture.limit * FLOOD_FACTOR:
                on_flood()


async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    with contextlib.suppress(trio.ClosedResourceError, trio.BrokenResourceError):
        await stream.send_all(data)
        await stream.aclose()


async def _converse(proc: trio.Process, stdin: bytes, out: _Capture, err: _Capture,
                    on_flood: Callable[[], None]) -> None:
    drained = trio.Event()

    async def drain_both() -> None:
        async with trio.open_nursery() as inner:
            inner.start_soon(_drain, proc.stdout, out, on_flood)
            inner.start_soon(_drain, proc.stderr, err, on_flood)
        drained.set()

    async with trio.open_nursery() as nursery:
        if proc.stdin is not None:
            nursery.start_soon(_feed, proc.stdin, stdin)
        nursery.start_soon(drain_both)
        await proc.wait()
        # Every writer lived in the command's namespace, which is gone now: EOF is due.
        with trio.move_on_after(_DRAIN_GRACE_S):
            await drained.wait()
        nursery.cancel_scope.cancel()


async def run_command(argv: Sequence[str], *, cwd: str | Path, policy: CommandPolicy,
                      stdin: bytes = b"") -> CommandResult:
    """Run an allowed command in ``cwd`` under ``policy`` and return what it did.

    Raises GateError only for refusals before the start and for ``spawn_failed``.
    Cancelling the caller kills the command and all it started before Cancelled
    propagates; so does the timeout (then the result has ``timed_out``).
    """
    exe = check_command(argv, policy)
    workdir = os.path.realpath(cwd)
    if not os.path.isdir(workdir):
        raise GateError("bad_workspace", f"the workspace {workdir} is not an existing directory")
    if not isinstance(stdin, bytes):
        raise GateError("bad_argument", "stdin must be bytes")
    started = time.monotonic()
    proc, leader = await _spawn(exe, workdir, policy, stdin)
    out, err = _Capture(policy.max_output_bytes), _Capture(policy.max_output_bytes)
    flood: list[str] = []

    def on_flood() -> None:
        if not flood:
            flood.append(f"output flood (more than {policy.max_output_bytes * FLOOD_FACTOR} bytes)")
            with contextlib.suppress(ProcessLookupError):
                os.kill(leader, signal.SIGKILL)

    try:
        with trio.move_on_after(policy.timeout_s) as deadline:
            await _converse(proc, stdin, out, err, on_flood)
    finally:
        with trio.CancelScope(shield=True):
            await _stop(proc, leader)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    killed = ("timeout" if deadline.cancelled_caught else flood[0] if flood
              else _describe_signal(-code) if code < 0 else None)
    return CommandResult(
        argv=exe, exit_code=code if code >= 0 else None,
        stdout=b"".join(out.chunks), stderr=b"".join(err.chunks),
        stdout_truncated=out.seen > out.kept, stderr_truncated=err.seen > err.kept,
        timed_out=deadline.cancelled_caught, killed=killed, duration_s=time.monotonic() - started)
