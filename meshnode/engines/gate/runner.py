"""Running a command for the cognitive agent: an allowlist, no shell, limits, a sandbox.

Nothing is ever parsed by a shell (seed 004's naive version greps a string for
"rm -rf" and uses ``shell=True``): the agent gives an argv list, the program
must be on the allowlist by name (a path such as ``/bin/sh`` is refused), and
the arguments reach it verbatim, so ``; | && $() ` > <`` are ordinary bytes.

The command runs in ``meshnode.engines.gate.sandbox``: PID 1 of new PID, IPC and mount
(and, unless the policy allows the network, network) namespaces, under rlimits,
as uid 65534 when the node is root. Its file system is its own
(``meshnode.engines.gate.mounts``): read-only /usr and a few files of /etc, a private
/tmp, its own /proc, and its folder ``cwd`` at ``/workspace``, where it starts;
relative paths work as before, absolute ones inside the folder are
``/workspace/...``, and nothing else of the host can be reached. Programs must
therefore live under /usr, /bin, /sbin or /lib* (the allowlist's SEARCH_PATH does).
This module checks the argv, captures the output within limits and stops the
command at the timeout, on an output flood or when the caller is cancelled. As
root, the caller must make the folder usable by that uid (chown it, or mode
0o777), else ``bad_workspace``; where the namespaces or the command's root
cannot be made, commands are refused (``no_isolation``) rather than run
unconfined.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import trio

from meshnode.engines.gate import GateError
from meshnode.engines.gate.sandbox import CHILD_PATH, NOBODY_UID, OPEN_FILES, forget, remember, spawn, stop

__all__ = [
    "CHILD_PATH", "SEARCH_PATH", "NOBODY_UID", "MAX_ARG_BYTES", "MAX_ARGV_BYTES", "OPEN_FILES",
    "FLOOD_FACTOR", "DEFAULT_PROGRAMS", "DEFAULT_DENY_ARGS", "ProgramRule", "CommandPolicy",
    "policy_from_config", "check_command", "CommandResult", "run_command",
]

SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"  # where policy_from_config looks, never the node's own PATH
MAX_ARG_BYTES = 32 * 1024
MAX_ARGV_BYTES = 256 * 1024
FLOOD_FACTOR = 64  # output beyond FLOOD_FACTOR * max_output_bytes on one stream: stop the command

_READ_CHUNK = 64 * 1024
_DRAIN_GRACE_S = 2.0


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
                      stdin: bytes = b"", records: Path | None = None,
                      env: Mapping[str, str] | None = None) -> CommandResult:
    """Run an allowed command in ``cwd`` under ``policy`` and return what it did. The command
    sees ``cwd`` as /workspace (its working directory, and HOME) and no other host folder.

    Raises GateError only for refusals before the start and for ``spawn_failed``.
    Cancelling the caller kills the command and all it started before Cancelled
    propagates; so does the timeout (then the result has ``timed_out``). ``records``: a
    folder where the running sandbox is recorded, for ``sandbox.kill_leftovers`` after a crash.
    ``env``: variables added to the command's fixed environment (PATH, HOME, LANG), which they
    may not replace (the reactor passes MESHNODE_REACTOR_JOB this way).
    """
    exe = check_command(argv, policy)
    workdir = os.path.realpath(cwd)
    if not os.path.isdir(workdir):
        raise GateError("bad_workspace", f"the workspace {workdir} is not an existing directory")
    if not isinstance(stdin, bytes):
        raise GateError("bad_argument", "stdin must be bytes")
    started = time.monotonic()
    extra = dict(env or {})
    for name, value in extra.items():
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,63}", str(name)) or name in ("PATH", "HOME", "LANG") \
                or not isinstance(value, str) or "\0" in value or len(value) > MAX_ARG_BYTES:
            raise GateError("bad_argument", f"environment variable {str(name)[:40]!r}: give a new upper-case name"
                            " and a text value")
    proc, leader = await spawn(exe, workdir, policy, stdin, extra)
    record = remember(records, proc.pid, leader) if records is not None else None
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
            await stop(proc, leader)
        forget(record)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    killed = ("timeout" if deadline.cancelled_caught else flood[0] if flood
              else _describe_signal(-code) if code < 0 else None)
    return CommandResult(
        argv=exe, exit_code=code if code >= 0 else None,
        stdout=b"".join(out.chunks), stderr=b"".join(err.chunks),
        stdout_truncated=out.seen > out.kept, stderr_truncated=err.seen > err.kept,
        timed_out=deadline.cancelled_caught, killed=killed, duration_s=time.monotonic() - started)
