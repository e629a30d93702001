"""Sandboxed processes do not outlive their node (issue 12, item 15): a real node, killed with
SIGKILL while the agent's `sleep` runs; the process must be gone within a bounded wait, and a
restart kills what a crash left behind. Checked by pid in /proc."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from llmharness import command_block
from meshharness import wait_until
from test_gate_session import _rows, start_mind


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a live process; None when it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == b"Z" else (fields[0].decode(), int(fields[1]))


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        stat = _stat(pid)
        if stat is None:
            return False
        pid = stat[1]
    return False


def _sleeper(seconds: str, node_pid: int) -> int | None:
    """The pid of the node's sandboxed `sleep SECONDS`, found in /proc."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
            except OSError:
                continue
            if len(argv) == 2 and argv[0].endswith(b"sleep") and argv[1] == seconds.encode() and _descends_from(int(entry.name), node_pid):
                return int(entry.name)
    return None


def _start_sleeping(tmp_path, llms):
    seconds = str(777_000 + random.randrange(1000))  # this test's own sleeper, not another's
    llm = llms("main", [
        "A long wait. " + command_block({"cmd_id": "z", "type": "process_start",
                                         "args": {"program": "sleep", "args": [seconds]}}),
        "Waiting for it; nothing else to do.",
    ])
    node = start_mind(tmp_path, llm, {})
    try:
        sleeper = wait_until(lambda: _sleeper(seconds, node.proc.pid), 60, "the sandboxed sleep to run")
        supervisor = _stat(sleeper)[1]
        assert _stat(supervisor) is not None and supervisor != node.proc.pid
    except BaseException:
        node.kill()
        raise
    return node, sleeper, supervisor


def _gone(*pids: int) -> bool:
    return all(_stat(pid) is None for pid in pids)


def _kill_if_left(*pids: int) -> None:
    for pid in pids:
        if _stat(pid) is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_sandboxed_process_dies_with_its_node_killed_by_sigkill(tmp_path, llms):
    node, sleeper, supervisor = _start_sleeping(tmp_path, llms)
    try:
        node.kill()  # SIGKILL: the node cannot clean anything up itself
        wait_until(lambda: _gone(sleeper, supervisor), 30, "the sandboxed sleep and its supervisor to end")
    finally:
        node.kill()
        _kill_if_left(sleeper, supervisor)


def test_a_restart_kills_the_sandboxed_processes_a_crash_left_running(tmp_path, llms):
    node, sleeper, supervisor = _start_sleeping(tmp_path, llms)
    try:
        os.kill(supervisor, signal.SIGSTOP)  # a supervisor that cannot act when its node dies
        wait_until(lambda: _stat(supervisor)[0] == "T", 10, "the supervisor to stop")
        node.kill()
        assert _stat(sleeper) is not None  # left behind by the crash
        node.start()
        wait_until(lambda: _gone(sleeper, supervisor), 30, "the restarted node to kill the leftovers")
        wait_until(lambda: _rows(node, "SELECT status FROM processes") == [("lost",)], 30,
                   "the process's row to be marked lost")
    finally:
        node.kill()
        _kill_if_left(sleeper, supervisor)


# A stand-in for a node: runs one sandboxed `sleep` through the runner, and is then killed.
FAKE_NODE = textwrap.dedent("""\
    import sys, trio
    from meshnode.engines.gate import runner, sandbox
    if sys.argv[3] == "no-pidfd":  # as on a kernel before 5.3: the supervisor polls its parent instead
        sandbox._pidfd = lambda pid: None
    policy = runner.policy_from_config(["sleep"], timeout_s=600.0)
    trio.run(lambda: runner.run_command(["sleep", sys.argv[2]], cwd=sys.argv[1], policy=policy))
    """)


@pytest.mark.parametrize("watch", ["pidfd", "no-pidfd"])
def test_the_supervisor_ends_the_command_when_its_parent_dies(workspace, watch):
    seconds = str(778_000 + random.randrange(1000))
    parent = subprocess.Popen([sys.executable, "-c", FAKE_NODE, str(workspace), seconds, watch])
    sleeper = supervisor = 0
    try:
        sleeper = wait_until(lambda: _sleeper(seconds, parent.pid), 60, "the sandboxed sleep to run")
        supervisor = _stat(sleeper)[1]
        parent.kill()
        parent.wait()
        wait_until(lambda: _gone(sleeper, supervisor), 30, "the sleep and its supervisor to end")
    finally:
        parent.kill()
        parent.wait()
        _kill_if_left(sleeper, supervisor)


def test_leftover_records_kill_only_the_process_they_name(tmp_path):
    """A record whose pid now belongs to another process (another start time), or that is not
    a record at all, kills nothing; every record is removed."""
    import json
    import subprocess

    from meshnode.engines.gate import sandbox

    bystander, command = subprocess.Popen(["sleep", "60"]), subprocess.Popen(["sleep", "60"])
    try:
        folder = tmp_path / "sandboxes"
        folder.mkdir()
        (folder / "sandbox-1.json").write_text(json.dumps({"supervisor": [bystander.pid, 1], "command": [1, 1]}))
        (folder / "sandbox-2.json").write_text("not json")
        assert sandbox.kill_leftovers(folder) == []
        assert bystander.poll() is None and not folder.exists()
        sandbox.remember(folder, bystander.pid, command.pid)
        assert sandbox.kill_leftovers(folder) == [command.pid, bystander.pid]
        assert bystander.wait(timeout=10) == command.wait(timeout=10) == -signal.SIGKILL
    finally:
        for proc in (bystander, command):
            proc.kill()
            proc.wait()
