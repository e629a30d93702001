"""``meshnode start`` and ``stop`` as a person runs them: real processes. One node is started for the
file (over a stale pid file) and stopped by the last test; the others read it. A process holding a
home and ignoring SIGTERM stands in for a stuck node (killed after --timeout)."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from meshnode.store.home import running

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="reads /proc")


def meshnode(home: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
    return subprocess.run([sys.executable, "-m", "meshnode", "--home", str(home), *args], env=env,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def init(home: Path, name: str, web_listen: str = "127.0.0.1:0") -> None:
    done = meshnode(home, "init", "--name", name)
    assert done.returncode == 0, done.stderr
    text = (home / "config.toml").read_text()
    text = text.replace('listen = ["/ip4/0.0.0.0/tcp/7822"]', 'listen = ["/ip4/127.0.0.1/tcp/0"]')
    text = text.replace('listen = "127.0.0.1:8470"', f'listen = "{web_listen}"')
    (home / "config.toml").write_text(text)


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A node started with ``meshnode start`` over a stale pid file (this test process's pid:
    alive, but no node); the result of that start."""
    home = tmp_path_factory.mktemp("life") / "a"
    init(home, "alpha")
    (home / "run").mkdir(exist_ok=True)
    (home / running.PID_FILE).write_text(f"{os.getpid()}\n")
    started = meshnode(home, "start")
    yield home, started
    if running.holder(home):  # a failed test left it running
        meshnode(home, "stop", "--timeout", "5")


def test_start_detaches_the_node_and_says_where_it_is(node):
    home, started = node
    assert started.returncode == 0, started.stderr
    line, = started.stdout.splitlines()
    pid = running.holder(home)
    assert line.startswith(f"started alpha (pid {pid}): /ip4/127.0.0.1/tcp/")
    assert "web http://127.0.0.1:" in line and line.endswith(f"; log {home / 'logs' / 'node.log'}")
    assert f"names pid {os.getpid()}, which runs no node here: replaced" in started.stderr  # the stale pid file
    assert running.read_pid(home) == pid != os.getpid()
    assert os.getsid(pid) == pid != os.getsid(0)  # its own session: no terminal's or caller's signals reach it
    assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
    assert os.readlink(f"/proc/{pid}/fd/2") == str(home / "logs" / "console.log")
    assert "ready; stop with Ctrl-C" in (home / "logs" / "console.log").read_text()


def test_a_second_start_or_run_is_refused(node):
    home, _ = node
    again = meshnode(home, "start")
    assert again.returncode == 3 and again.stdout.startswith(f"already running in {home} (pid {running.holder(home)})")
    run = meshnode(home, "run")
    assert run.returncode == 1 and "a node already runs in" in run.stderr and "meshnode stop" in run.stderr


def test_logs_and_log_level_of_the_running_node(node):
    home, _ = node
    logs = meshnode(home, "logs", "-n", "200")
    assert logs.returncode == 0 and "meshnode.node.lifecycle: meshnode" in logs.stdout and "starting in" in logs.stdout
    assert "replaced the pid file of a node that is gone" in logs.stdout
    assert "did:      " not in (home / "logs" / "node.log").read_text()  # the banner is the console's only
    assert meshnode(home, "log-level").stdout == "log level: info\n"
    changed = meshnode(home, "log-level", "debug")
    assert changed.returncode == 0 and changed.stdout.startswith("log level: debug (was info); for this run only")
    assert meshnode(home, "log-level", "info").stdout.startswith("log level: info (was debug)")


def test_stop_waits_for_the_node_to_finish_and_says_so(node):
    home, _ = node
    pid = running.holder(home)
    stopped = meshnode(home, "stop")
    assert stopped.returncode == 0 and stopped.stdout.startswith(f"stopped (pid {pid}, ")
    assert running.holder(home) is None and not (home / running.PID_FILE).exists()
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2][:3]
    db = sqlite3.connect(home / "data" / "meshnode.db")
    try:  # the node recorded its stop before it ended: its writes were finished, not cut
        assert db.execute("SELECT stop FROM main_process WHERE name = 'node'").fetchone() == (1,)
    finally:
        db.close()
    assert meshnode(home, "logs", "-n", "1").stdout.rstrip().endswith("meshnode.node.lifecycle: stopped")
    again = meshnode(home, "stop")
    assert again.returncode == 3 and again.stdout.startswith(f"not running: no node runs in {home}")


def test_a_node_that_ignores_sigterm_is_killed_after_the_timeout(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "node.key").write_bytes(b"")  # a home, to `stop` (which reads no key)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import signal, sys, time
        from meshnode.store.home import running
        running.hold(sys.argv[1])
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("held", flush=True)
        time.sleep(120)
        """), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        stopped = meshnode(tmp_path, "stop", "--timeout", "0.5")
        assert stopped.returncode == 4, stopped.stderr
        assert stopped.stdout.startswith(f"killed: the node (pid {holder.pid}) did not stop within 0.5 s after SIGTERM")
        assert holder.wait(timeout=10) == -9
        assert running.holder(tmp_path) is None and not (tmp_path / running.PID_FILE).exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_start_that_fails_says_why(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        home = tmp_path / "b"
        init(home, "beta", web_listen=f"127.0.0.1:{busy.getsockname()[1]}")
        started = meshnode(home, "start")
    assert started.returncode == 1 and started.stdout == ""
    first, *rest = started.stderr.splitlines()
    assert first.startswith("meshnode: the node exited at start (code 1); the end of ")
    assert any(f"is in use; set [web] listen to another port" in line for line in rest)
    assert running.holder(home) is None
    assert "the node stopped: " in (home / "logs" / "node.log").read_text()  # the reason is in the log too
