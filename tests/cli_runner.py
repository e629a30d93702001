"""The ``meshnode`` command line run inside the test process: ``cli.main(argv)`` with its own
stdin, stdout and stderr, the scrubbed environment of tests/clienv.py, and everything else the
CLI changes for its process put back afterwards.

A CLI subprocess costs a second or more of imports; in-process, a command costs what it does.
What only a process shows (signals, the interpreter's exit on a closed pipe, the console
script) stays in the few tests that start one (the ``run_cli_process`` fixture).

The process-wide state a command touches, and how each is kept from the next test:
os.environ (replaced for the call, restored), the umask (the CLI sets 077), the working
directory, sys.stdin/stdout/stderr (replaced by captured streams; ``isatty()`` is False, as
for a pipe), logging (``basicConfig`` binds a handler to the stderr of the call: the root's
handlers and every logger's level are put back), and signal handlers (trio's and the node's
are their own context managers; checked here all the same).
"""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from clienv import cli_env


@dataclass
class CliResult:
    """What tests read of a CLI run: the fields of ``subprocess.CompletedProcess`` they use."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def captured() -> TextIO:
    """A stream like a process's stdout into a pipe: UTF-8, block buffered, not a terminal."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")


def _text(stream: TextIO) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", errors="replace")


def run_cli_in_process(args, fake_user_home: Path, *, env: dict[str, str] | None = None, input: str | None = None,
                       stdout: TextIO | None = None) -> CliResult:
    """``meshnode *args`` as ``cli.main``; ``stdout``: a stream of the caller's (its text is then
    not read back: the result's stdout is ""). Inside a running trio loop (an async test), main
    runs on a thread of its own (its ``trio.run`` cannot nest in the test's), and the test's loop
    waits meanwhile: a node served by that loop cannot answer such a command."""
    argv = [a if isinstance(a, str) else os.fspath(a) if isinstance(a, Path) else str(a) for a in args]
    box: dict = {}

    def call() -> None:
        box["result"] = _run_main(argv, fake_user_home, env, input, stdout)

    if _in_trio():
        worker = threading.Thread(target=call, name="meshnode-cli")
        worker.start()
        worker.join()
    else:
        call()
    return box["result"]


def _in_trio() -> bool:
    try:
        import trio

        trio.lowlevel.current_trio_token()
    except (RuntimeError, ImportError):
        return False
    return True


def _run_main(argv: list[str], fake_user_home: Path, env, input, stdout) -> CliResult:
    from meshnode.faces import cli

    out = stdout if stdout is not None else captured()
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    inp = io.TextIOWrapper(io.BytesIO((input or "").encode("utf-8")), encoding="utf-8")
    saved = _ProcessState.save()
    environ = cli_env(fake_user_home, env)  # read before the clear: the test's own PATH, PYTHONPATH...
    os.environ.clear()
    os.environ.update(environ)
    sys.stdin, sys.stdout, sys.stderr = inp, out, err
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: usage errors (2), --help and --version (0)
        code = _exit_code(exc, err)
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc(file=err)
        code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved.streams
        saved.restore()
    return CliResult(argv, code, "" if stdout is not None else _text(out), _text(err))


def _exit_code(exc: SystemExit, err: TextIO) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=err)
    return 1


@dataclass
class _ProcessState:
    """What a CLI call may change for the whole process, as it was before the call."""

    environ: dict[str, str]
    umask: int
    cwd: str
    streams: tuple
    root_handlers: list
    levels: dict[str, int]
    signals: dict[int, object]

    @classmethod
    def save(cls) -> "_ProcessState":
        mask = os.umask(0o022)
        os.umask(mask)
        root = logging.getLogger()
        levels = {name: lg.level for name, lg in logging.Logger.manager.loggerDict.items()
                  if isinstance(lg, logging.Logger)}
        levels[""] = root.level
        state = cls(dict(os.environ), mask, os.getcwd(), (sys.stdin, sys.stdout, sys.stderr), root.handlers,
                    levels, _signal_handlers())
        root.handlers = []  # so the CLI's basicConfig binds its handler to this call's stderr
        return state

    def restore(self) -> None:
        os.environ.clear()
        os.environ.update(self.environ)
        os.umask(self.umask)
        os.chdir(self.cwd)
        root = logging.getLogger()
        for handler in root.handlers:
            handler.close()
        root.handlers = self.root_handlers
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger):
                logger.setLevel(self.levels.get(name, logging.NOTSET))
        root.setLevel(self.levels[""])
        changed = sorted(s for s, h in _signal_handlers().items() if h != self.signals[s])
        for signum in changed:
            signal.signal(signum, self.signals[signum])
        assert not changed, f"the CLI left signal handlers changed: {changed}"


def _signal_handlers() -> dict[int, object]:
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD)}


def run_into_closed_pipe(args, fake_user_home: Path, *, read_lines: int = 0) -> CliResult:
    """``meshnode *args`` in-process with stdout into a real pipe whose reader reads ``read_lines``
    lines and leaves (0: it has gone before the CLI writes anything). After main returns, the
    stream is flushed and closed as the interpreter does at exit: if that meets the closed pipe
    (the CLI did not take care of it), the result is what the interpreter makes of it (exit
    code 120, "Exception ignored" on stderr)."""
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "r", encoding="utf-8")
    got: list[str] = []

    def read_then_leave() -> None:
        with reader:
            got.extend(reader.readline() for _ in range(read_lines))

    thread = None
    if read_lines:
        thread = threading.Thread(target=read_then_leave, name="pipe-reader")
        thread.start()
    else:
        reader.close()
    out = open(write_fd, "w", encoding="utf-8")  # a process's stdout into a pipe: block buffered
    result = run_cli_in_process(args, fake_user_home, stdout=out)
    try:
        out.close()
    except BrokenPipeError:
        result.returncode = 120
        result.stderr += "Exception ignored while flushing sys.stdout:\nBrokenPipeError: [Errno 32] Broken pipe\n"
    if thread is not None:
        thread.join(timeout=60)
        assert not thread.is_alive(), "the pipe's reader never got its lines"
        assert all(got), f"the reader wanted {read_lines} line(s) and got {got!r}"
    return result


class _WatchedOutput(io.RawIOBase):
    """Bytes written, kept; ``seen`` is set once ``needle`` has been written."""

    def __init__(self, needle: bytes):
        self.data = bytearray()
        self.needle = needle
        self.seen = threading.Event()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self.data += bytes(b)
        if self.needle in self.data:
            self.seen.set()
        return len(b)


def run_node_until_signal(args, fake_user_home: Path, *, signum: int, hung_s: float, then=None,
                          env: dict[str, str] | None = None) -> tuple[CliResult, str]:
    """``meshnode *args run`` in this process (the main thread: the node's signal receiver needs
    it), sent ``signum`` once it printed "ready" (its receiver is open from before that line to its
    return). ``then()`` runs on the sender's thread just before the signal. For the call, ``signum``
    has a handler that only notes it: a signal that finds no node (it ended on its own) does not
    reach pytest. Returns the result and the node's stdout."""
    assert threading.current_thread() is threading.main_thread() and not _in_trio()
    raw = _WatchedOutput(b"ready")
    out = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")
    failed: list[BaseException] = []
    stray: list[int] = []

    def signal_when_ready() -> None:
        if not raw.seen.wait(hung_s):
            failed.append(AssertionError(f"the node was not ready within {hung_s} s"))
        else:
            try:
                if then is not None:
                    then()
            except BaseException as exc:  # reported once the node stopped
                failed.append(exc)
        os.kill(os.getpid(), signum)

    previous = signal.signal(signum, lambda s, _frame: stray.append(s))
    sender = threading.Thread(target=signal_when_ready, name="signal-sender")
    try:
        sender.start()
        result = run_cli_in_process([*args, "run"], fake_user_home, env=env, stdout=out)
        sender.join(timeout=hung_s)
    finally:
        signal.signal(signum, previous)
    out.flush()
    if failed:
        raise failed[0]
    assert not stray, "the signal came when no node listened for it"
    return result, raw.data.decode("utf-8")
