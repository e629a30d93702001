"""A child the running node started is the node's own process: the node waits on it, so a child
stopped by `children stop` (another process) or ending by itself is reaped, not left a zombie under
its running parent, and how it ended is what `children list` shows (issue 35, defect 7). A trivial
child stands in for a meshnode run; tests/test_spawn_live.py does it with a real one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import trio

from meshnode.engines.spawn import launch
from meshnode.engines.spawn.processes import ChildProcesses

# looks like `meshnode --home HOME run` to launch.running_pid; waits for a signal, or exits with ``code``
_SLEEPER = "import signal, sys; signal.pause() if sys.argv[-1] == 'run' else sys.exit(int(sys.argv[-1]))"


def sleeper(code: int | None = None):
    return lambda home: [sys.executable, "-c", _SLEEPER, "meshnode", "--home", str(home), "run",
                         *([] if code is None else [str(code)])]


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
    assert not (home / "run" / "node.pid").exists()


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
        (home / "run").mkdir()
        launch.write_pid(home, proc.pid)
        assert launch.stop(home, "none") is True
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    state = launch.process_state(home)
    assert state["exit"]["stopped_by"] == "SIGTERM" and launch.describe(state) == "stopped"
    assert launch.describe({"running": False, "exit": {"stopped_by": "SIGKILL"}}) == "stopped (killed)"
    assert launch.describe({"running": False, "exit": None}) == "stopped"
