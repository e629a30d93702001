"""A child the running node started is the node's own process: the node waits on it, so a child
stopped by `children stop` (another process) or ending by itself is reaped, not left a zombie under
its running parent, and how it ended is what `children list` shows (issue 35, defect 7). A trivial
child stands in for a meshnode run; tests/test_spawn_live.py does it with a real one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio

from meshnode.base.errors import MeshnodeError
from meshnode.engines.spawn import launch
from meshnode.engines.spawn.processes import ChildProcesses
from meshnode.store.home import running

# looks like `meshnode --home HOME run` to launch.running_pid and holds the home as a node does (its
# lock, its pid file); waits for a signal, or exits with ``code``
_SLEEPER = ("import signal, sys; from pathlib import Path; from meshnode.store.home import running;"
            " held = running.hold(Path(sys.argv[3]));"
            " signal.pause() if sys.argv[-1] == 'run' else sys.exit(int(sys.argv[-1]))")


def sleeper(code: int | None = None):
    return lambda home: [sys.executable, "-c", _SLEEPER, "meshnode", "--home", str(home), "run",
                         *([] if code is None else [str(code)])]


def wait_held(home: Path, pid: int, timeout: float = 30.0) -> None:
    """Until the stand-in holds its home (a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout
    while running.holder(home) != pid:
        assert time.monotonic() < deadline, f"pid {pid} never held {home}"
        time.sleep(0.02)


def state_of(pid: int) -> str | None:
    """The process's state letter in /proc (Z: a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return None


async def stop_from_another_process(home: Path) -> subprocess.CompletedProcess:
    """launch.stop as `meshnode children stop` runs it: in a process that is not the child's parent."""
    code = "import sys; from pathlib import Path; from meshnode.engines.spawn import launch;" \
           " print(launch.stop(Path(sys.argv[1]), 'none'))"
    return await trio.run_process([sys.executable, "-c", code, str(home)], capture_stdout=True, capture_stderr=True,
                                  env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


async def test_a_child_stopped_by_another_process_is_reaped_and_shown_stopped(tmp_path):
    home = tmp_path / "kid"
    home.mkdir()
    processes = ChildProcesses(argv=sleeper())
    pid = await processes.open(home)
    await trio.to_thread.run_sync(wait_held, home, pid)
    assert launch.running_pid(home) == pid and launch.describe(launch.process_state(home)) == "running"
    done = await stop_from_another_process(home)
    assert done.returncode == 0 and done.stdout.strip() == b"True", done.stderr
    rec = await processes.wait(pid)
    assert rec["signal"] == "SIGTERM" and processes.exited(pid)
    assert state_of(pid) is None  # reaped: no <defunct> left under this (running) parent
    try:
        os.waitpid(pid, os.WNOHANG)
        raise AssertionError("the child was never reaped")
    except ChildProcessError:
        pass
    state = launch.process_state(home)
    assert state["running"] is False and state["exit"]["signal"] == "SIGTERM"
    assert launch.describe(state) == "stopped (SIGTERM)"
    assert running.holder(home) is None  # (the stand-in leaves its pid file, stale now: a real node removes it)


async def test_a_child_that_ends_by_itself_is_reaped_with_its_exit_code(tmp_path):
    home = tmp_path / "kid"
    home.mkdir()
    processes = ChildProcesses(argv=sleeper(3))
    pid = await processes.open(home)
    rec = await processes.wait(pid)
    assert rec["code"] == 3 and state_of(pid) is None
    assert launch.describe(launch.process_state(home)) == "stopped (exit 3)"
    processes.argv = sleeper()
    pid = await processes.open(home)  # started again: the last run's exit record goes
    assert not (home / "run" / "node.exit").exists() and launch.describe(launch.process_state(home)) == "running"
    os.kill(pid, 9)
    assert (await processes.wait(pid))["signal"] == "SIGKILL" and state_of(pid) is None


def test_stop_notes_the_signal_when_no_parent_recorded_the_exit(tmp_path):
    """A child whose parent process is gone (started by a CLI call): nobody knows its exit status."""
    home = tmp_path / "kid"
    home.mkdir()
    proc = subprocess.Popen(sleeper()(home), start_new_session=True)
    try:
        wait_held(home, proc.pid)
        assert launch.stop(home, "none") is True
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    state = launch.process_state(home)
    assert state["exit"]["stopped_by"] == "SIGTERM" and launch.describe(state) == "stopped"
    assert launch.describe({"running": False, "exit": {"stopped_by": "SIGKILL"}}) == "stopped (killed)"
    assert launch.describe({"running": False, "exit": None}) == "stopped"


# --- the review of issue 35: one stop, one pid writer, the console apart from the rotated log ---------

async def test_a_child_the_node_starts_prints_to_its_console_file_not_to_its_rotated_log(tmp_path):
    """The child's own run rotates logs/node.log: what it prints (a traceback) must not go there,
    or a rotation takes it away (node.log.N) from the file the child's stdout still points at."""
    home = tmp_path / "kid"
    home.mkdir()
    processes = ChildProcesses(argv=sleeper())
    pid = await processes.open(home)
    await trio.to_thread.run_sync(wait_held, home, pid)
    for fd in (1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == str(home / "logs" / "console.log")
    assert not (home / "logs" / "node.log").exists()
    os.kill(pid, 15)
    await processes.wait(pid)
    assert launch.direct_argv(home)[-2:] == ["run", "--detached"]  # records in node.log alone, as `start` runs


def test_a_failed_start_shows_the_childs_console(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "node.log").write_text("2025-01-01 00:00:00,000 INFO meshnode: starting\n")
    assert "starting" in launch.log_tail(tmp_path)  # nothing printed: the log's end
    (tmp_path / "logs" / "console.log").write_text("Traceback (most recent call last):\nValueError: boom\n")
    assert launch.log_tail(tmp_path) == "Traceback (most recent call last):\nValueError: boom\n"


def test_a_child_is_stopped_by_its_homes_lock_as_meshnode_stop_does(tmp_path):
    """The process that holds the home is the node, whatever its command line says (here: none of
    meshnode's); one whose pid file is gone cannot be signalled safely: no_pid, as `meshnode stop`."""
    home = tmp_path / "kid"
    home.mkdir()
    code = "import signal, sys; from pathlib import Path; from meshnode.store.home import running;" \
           " held = running.hold(Path(sys.argv[1])); signal.pause()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(home)], start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        wait_held(home, proc.pid)
        (home / running.PID_FILE).unlink()
        with pytest.raises(MeshnodeError) as err:
            launch.stop(home, "none")
        assert err.value.code == "no_pid" and proc.poll() is None
        (home / running.PID_FILE).write_text(f"{proc.pid}\n")
        assert launch.stop(home, "none") is True
        assert proc.wait(timeout=10) == -15 and running.holder(home) is None
        assert launch.process_state(home)["exit"]["stopped_by"] == "SIGTERM"
        assert launch.stop(home, "none") is False
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
