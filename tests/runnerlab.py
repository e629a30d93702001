"""Helpers for the command-runner tests (tests/test_gate_runner.py, test_gate_mounts.py); the
``workspace`` and ``namespaces`` fixtures are in conftest.py."""

from __future__ import annotations

import contextlib
import os
import tempfile
import textwrap
from pathlib import Path

import pytest
import trio

from meshnode.engines.gate.runner import DEFAULT_PROGRAMS, CommandResult, policy_from_config, run_command

ROOT = os.geteuid() == 0
OUTSIDE_TMP = "/var/tmp" if os.path.isdir("/var/tmp") else None  # not only a private /tmp hides it
needs_root = pytest.mark.skipif(not ROOT, reason="dropping to uid 65534 needs root")

# Blocks until the runner feeds stdin, which it does only once spawn has returned (and the
# namespaces fixture has looked at the command): give such commands stdin=GO.
HOLD = "import sys; sys.stdin.read()\n"
GO = b"go"

# Tries each (label, callable) and prints "<label> ok" or "<label> <errno name>".
ATTEMPT = textwrap.dedent("""\
    import errno, os, socket
    def attempt(label, action):
        try:
            action()
            print(label, 'ok', flush=True)
        except OSError as exc:
            print(label, errno.errorcode.get(exc.errno, exc.errno), flush=True)
    """)


def make_workspace() -> Path:
    """A workspace the sandbox uid can use (mode 0o777)."""
    path = Path(tempfile.mkdtemp(prefix="meshnode-gate-"))
    path.chmod(0o777)
    return path


def in_namespace(namespace: str) -> list[int]:
    """Host pids of the processes in PID namespace ``namespace``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    found.append(int(entry))
            except OSError:
                continue
    return found


@contextlib.asynccontextmanager
async def fifo_line(path: Path):
    """A FIFO at ``path`` a command can write to; yields a function awaiting its next line."""
    os.mkfifo(path)
    path.chmod(0o666)
    reader = trio.lowlevel.FdStream(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    keep_open = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # so reads wait rather than see EOF

    async def line() -> bytes:
        data = b""
        while not data.endswith(b"\n"):
            chunk = await reader.receive_some(100)
            assert chunk, f"the command closed the FIFO after {data!r}"
            data += chunk
        return data

    try:
        yield line
    finally:
        await reader.aclose()
        os.close(keep_open)


def attempts(stdout: bytes) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in stdout.decode().splitlines())


def policy(*extra: str, **limits):
    return policy_from_config(DEFAULT_PROGRAMS + extra, **limits)


def exists(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def python(code: str, workspace: Path, stdin: bytes = b"", **limits) -> CommandResult:
    return await run_command(["python3", "-c", code], cwd=workspace, policy=policy(**limits), stdin=stdin)
