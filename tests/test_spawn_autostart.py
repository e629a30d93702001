"""A child's autostart and its launching: the systemd unit against a golden file (and systemd's own
checker where it is installed), the scripts and the direct launch really starting and stopping a
`meshnode run` of a home made by `meshnode init`, and the environment a child gets."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from meshnode.net import control
from meshnode.net.control import ControlError
from meshnode.engines.spawn import autostart, launch
from meshnode.base.errors import SpawnError

GOLDEN = Path(__file__).parent / "golden" / "spawn_unit.service"
DID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
UNIT = "meshnode-z6MkhaXgBZDvotDk.service"


@pytest.fixture
def short_tmp():
    """A folder with a short path: a node's control socket must fit a unix socket's 108 bytes."""
    root = Path(tempfile.mkdtemp(prefix="spo", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def no_systemd(monkeypatch):
    """As in this container and in CI, whatever the machine running the test has."""
    monkeypatch.setattr(autostart, "systemd_usable", lambda *, system: False)


# --- the texts -------------------------------------------------------------------------------

def test_the_user_unit_is_the_golden_one():
    text = autostart.systemd_unit_text(Path("/srv/kids/CCORE-z6Mkh"), DID, "kid-1", system=False,
                                       python="/opt/mn/bin/python3")
    golden = GOLDEN.read_text().replace("@HOME@", "/srv/kids/CCORE-z6Mkh").replace("@PYTHON@", "/opt/mn/bin/python3")
    assert text == golden.replace("@DID@", DID).replace("@NAME@", "kid-1")
    assert autostart.unit_name(DID) == UNIT


def test_a_system_unit_runs_as_the_homes_owner_after_the_network(short_tmp):
    user_text = autostart.systemd_unit_text(short_tmp, DID, "kid", system=False)
    text = autostart.systemd_unit_text(short_tmp, DID, "kid", system=True)
    added = [line for line in text.splitlines() if line not in user_text.splitlines()]
    owner = __import__("pwd").getpwuid(short_tmp.stat().st_uid).pw_name
    assert added == ["After=network-online.target", "Wants=network-online.target", f"User={owner}",
                     "WantedBy=multi-user.target"]
    assert "User=someone" in autostart.systemd_unit_text(short_tmp, DID, "kid", system=True, user="someone")


def test_paths_with_spaces_percent_and_dollar_are_quoted_for_systemd(short_tmp):
    home = short_tmp / "my kid 100% $HOME"
    text = autostart.systemd_unit_text(home, DID, "50% kid", system=False)
    assert f'ExecStart={sys.executable} -m meshnode --home "{short_tmp}/my kid 100%% $$HOME" run' in text
    assert f'ReadWritePaths="{short_tmp}/my kid 100%% $HOME"' in text  # $ is literal outside Exec lines
    assert f"WorkingDirectory={short_tmp}/my kid 100%% $HOME\n" in text
    assert "Description=meshnode child 50%% kid (" in text
    with pytest.raises(SpawnError) as info:
        autostart.systemd_unit_text(short_tmp / "a\nb", DID, "kid", system=False)
    assert info.value.code == "bad_autostart" and "line break" in info.value.reason


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
@pytest.mark.parametrize("system", [False, True])
def test_systemd_accepts_the_unit(short_tmp, system):
    home = short_tmp / "odd home %1"
    home.mkdir()
    unit = short_tmp / UNIT
    unit.write_text(autostart.systemd_unit_text(home, DID, "kid", system=system))
    runtime = short_tmp / "xdg"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
    done = subprocess.run(["systemd-analyze", "verify", *([] if system else ["--user"]), str(unit)],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert UNIT not in done.stderr, done.stderr  # not even a warning about our file
    # and the checker can fail: the same unit with one unescaped specifier is refused
    unit.write_text(unit.read_text().replace("%%1", "%1"))
    bad = subprocess.run(["systemd-analyze", "verify", *([] if system else ["--user"]), str(unit)],
                         capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode != 0 and "specifier" in bad.stderr


def test_scripts_quote_the_paths(short_tmp):
    texts = autostart.script_texts(short_tmp / "it's a kid", python="/opt/my py/python3")
    assert f"HOME_DIR='{short_tmp}/it'\"'\"'s a kid'" in texts["start.sh"]
    assert "PYTHON='/opt/my py/python3'" in texts["start.sh"]
    for text in texts.values():
        assert text.startswith("#!/bin/sh\n")
        assert subprocess.run(["sh", "-n"], input=text, text=True).returncode == 0  # it parses


# --- install ---------------------------------------------------------------------------------

def test_install_writes_a_user_unit_and_says_how_to_enable_it_where_systemd_does_not_run(
        short_tmp, monkeypatch, no_systemd):
    monkeypatch.setenv("HOME", str(short_tmp / "user"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    home = short_tmp / "kid"
    home.mkdir()
    got = autostart.install(home, DID, "kid", "systemd-user")
    path = short_tmp / "user" / ".config" / "systemd" / "user" / UNIT
    assert got["kind"] == "systemd-user" and got["files"] == [str(path)] and got["enabled"] is False
    assert path.read_text() == autostart.systemd_unit_text(home, DID, "kid", system=False)
    for command in ("systemctl --user daemon-reload", f"systemctl --user enable --now {UNIT}", "loginctl enable-linger"):
        assert command in got["hint"]
    assert autostart.installed(home)["unit"] == UNIT
    assert autostart.uninstall(home) == [str(path)] and not path.exists()
    assert autostart.installed(home)["kind"] == "none"


def test_install_enables_the_unit_where_systemd_runs(short_tmp, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(short_tmp / "cfg"))
    calls = []
    monkeypatch.setattr(autostart, "systemd_usable", lambda *, system: True)
    monkeypatch.setattr(autostart, "systemctl", lambda system, *args: calls.append((system, *args)) or "")
    got = autostart.install(short_tmp, DID, "kid", "systemd-user")
    assert got["enabled"] is True and (short_tmp / "cfg" / "systemd" / "user" / UNIT).is_file()
    assert calls == [(False, "daemon-reload"), (False, "enable", UNIT)]
    assert "loginctl enable-linger" in got["hint"]


def test_a_system_unit_needs_root(short_tmp, monkeypatch, no_systemd):
    monkeypatch.setattr(autostart, "SYSTEM_UNIT_DIR", short_tmp / "etc")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SpawnError) as info:
        autostart.install(short_tmp, DID, "kid", "systemd-system")
    assert info.value.code == "bad_autostart" and "root" in info.value.reason
    assert not (short_tmp / "etc").exists()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    got = autostart.install(short_tmp, DID, "kid", "systemd-system")
    assert got["files"] == [str(short_tmp / "etc" / UNIT)] and not got["enabled"]
    assert "systemctl enable --now" in got["hint"] and "linger" not in got["hint"]


def test_install_scripts_and_none(short_tmp):
    got = autostart.install(short_tmp, DID, "kid", "script")
    assert got["files"] == [str(short_tmp / "start.sh"), str(short_tmp / "stop.sh")]
    for path in got["files"]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o755
    assert f"@reboot {short_tmp}/start.sh" in got["hint"]
    bare = short_tmp / "bare"
    bare.mkdir()
    assert autostart.install(bare, DID, "kid", "none") == {"kind": "none", "files": [], "enabled": False, "hint": ""}
    assert list(bare.iterdir()) == []
    with pytest.raises(SpawnError) as info:
        autostart.install(bare, DID, "kid", "cron")
    assert info.value.code == "bad_autostart"


# --- launching a real node -------------------------------------------------------------------

def test_child_env_keeps_only_the_passphrase_of_the_meshnode_variables():
    env = launch.child_env({"PATH": "/bin", "PYTHONPATH": "/src", "MESHNODE_HOME": "/parent",
                            "MESHNODE_NET_LISTEN": "/ip4/0.0.0.0/tcp/7822", "MESHNODE_KEY_PASSPHRASE": "pw",
                            "MESHNODE_WEB_LISTEN": "0.0.0.0:1", "XMESHNODE_X": "kept"})
    assert env == {"PATH": "/bin", "PYTHONPATH": "/src", "MESHNODE_KEY_PASSPHRASE": "pw", "XMESHNODE_X": "kept"}


@pytest.fixture
def node_home(short_tmp, monkeypatch):
    """A home made by `meshnode init`, set to listen on 127.0.0.1 port 0 by its config alone (a
    launched child gets no MESHNODE_* variable). A parent's variable that would break it is set
    here on purpose: the child must not see it."""
    home = short_tmp / "kid"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
    env["HOME"] = str(short_tmp)
    done = subprocess.run([sys.executable, "-m", "meshnode", "--home", str(home), "init", "--name", "kid"], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    did = next(line.split()[1] for line in done.stdout.splitlines() if line.startswith("did:"))
    config = home / "config.toml"
    text = config.read_text()
    for old, new in (('listen = ["/ip4/0.0.0.0/tcp/7822"]', 'listen = ["/ip4/127.0.0.1/tcp/0"]'),
                     ('listen = "127.0.0.1:8470"', 'listen = "127.0.0.1:0"')):
        assert old in text
        text = text.replace(old, new)
    text = text.replace("[cognition]\nenabled = true", "[cognition]\nenabled = false")
    config.write_text(text)
    monkeypatch.setenv("MESHNODE_NET_LISTEN", "/ip4/192.0.2.1/tcp/1")  # unusable here: it must not leak
    monkeypatch.setenv("MESHNODE_HOME", str(short_tmp / "parent"))
    yield home, did
    pid = launch.running_pid(home)  # never leave a node behind, whatever failed
    if pid is not None:
        os.kill(pid, signal.SIGKILL)


def wait_answering(home: Path, did: str, timeout: float = 60.0) -> dict:
    """Poll the node's control socket until it answers `status` (a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status = control.call(control.socket_path(home / "data"), "status", timeout=5.0)
            assert status["did"] == did and status["running"]
            return status
        except ControlError as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"the node did not answer: {exc.reason}\n{launch.log_tail(home)}") from None
        time.sleep(0.1)


def assert_gone(pid: int, home: Path) -> None:
    assert launch.running_pid(home) is None
    cmdline = Path(f"/proc/{pid}/cmdline")
    assert not cmdline.exists() or cmdline.read_bytes() == b"", "the node's process is still there"
    assert not (home / "run" / "node.pid").exists()


def test_start_and_stop_scripts_run_and_stop_a_real_node(node_home):
    home, did = node_home
    autostart.install(home, did, "kid", "script")
    started = subprocess.run([str(home / "start.sh")], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    pid = launch.running_pid(home)
    assert pid is not None and f"pid {pid}" in started.stdout
    status = wait_answering(home, did)
    assert all("/ip4/127.0.0.1/" in a for a in status["addresses"])  # its config, not the parent's variable
    again = subprocess.run([str(home / "start.sh")], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already runs" in again.stderr and launch.running_pid(home) == pid
    assert os.readlink(f"/proc/{pid}/fd/1") == str(home / "logs" / "console.log")  # not the rotated node.log
    stopped = subprocess.run([str(home / "stop.sh")], capture_output=True, text=True, timeout=60)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr  # `meshnode stop`'s line
    assert_gone(pid, home)
    assert "stopped" in launch.log_tail(home, 5)  # SIGTERM: the node's own clean exit, on its console
    assert "did:      " not in (home / "logs" / "node.log").read_text()  # detached: the banner is the console's
    again = subprocess.run([str(home / "stop.sh")], capture_output=True, text=True)
    assert again.returncode == 0 and "not running" in again.stdout


def test_launch_stop_and_running_pid_directly(node_home):
    home, did = node_home
    assert launch.running_pid(home) is None and launch.stop(home, "none") is False
    got = launch.launch(home, "none")
    assert got["via"] == "direct" and got["log"] == str(home / "logs" / "node.log")
    assert launch.running_pid(home) == got["pid"], launch.log_tail(home)  # found in /proc, even before its pid file
    status = wait_answering(home, did)
    assert int((home / "run" / "node.pid").read_text()) == got["pid"]  # written before it answers
    assert all("/ip4/127.0.0.1/" in a for a in status["addresses"])
    assert os.getsid(got["pid"]) == got["pid"]  # its own session: the parent's Ctrl-C never reaches it
    assert os.readlink(f"/proc/{got['pid']}/fd/2") == str(home / "logs" / "console.log")
    assert Path(f"/proc/{got['pid']}/cmdline").read_bytes().split(b"\0")[-3:] == [b"run", b"--detached", b""]
    env = Path(f"/proc/{got['pid']}/environ").read_bytes().split(b"\0")
    assert not [e for e in env if e.startswith(b"MESHNODE_")]
    assert launch.launch(home, "none") == {**got, "via": "running", "already_running": True}
    assert launch.stop(home, "none", timeout=20.0) is True
    assert_gone(got["pid"], home)
    assert "ready; stop with Ctrl-C" in launch.log_tail(home, 50)


def test_launch_uses_start_sh_when_written(node_home, no_systemd):
    home, did = node_home
    autostart.install(home, did, "kid", "script")
    got = launch.launch(home, "script")
    assert got["via"] == "script" and got["pid"] == launch.running_pid(home) is not None
    wait_answering(home, did)
    assert launch.stop(home, "script") is True
    assert_gone(got["pid"], home)


def test_a_stale_pid_file_is_never_signalled(short_tmp):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (short_tmp / "run").mkdir()
        (short_tmp / "run" / "node.pid").write_text(f"{sleeper.pid}\n")  # a reused pid: not a meshnode run
        assert launch.running_pid(short_tmp) is None
        assert launch.stop(short_tmp, "none") is False  # no node holds the home: nothing is signalled
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_node_that_ignores_sigterm_is_killed_after_the_timeout(short_tmp):
    """A stand-in whose command line is a meshnode run of the home, holding it as a node does, deaf
    to SIGTERM."""
    home = short_tmp / "deaf"
    home.mkdir()
    fake = short_tmp / "meshnode"
    fake.write_text("import signal, sys, time\nfrom pathlib import Path\nfrom meshnode.store.home import running\n"
                    "held = running.hold(Path(sys.argv[2]))\n"
                    "signal.signal(signal.SIGTERM, lambda *_: print('term', flush=True))\n"  # heard, and lives on
                    "print('up', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, str(fake), "--home", str(home), "run"], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert proc.stdout.readline() == "up\n"  # SIGTERM is survived from here on
        assert launch.running_pid(home) == proc.pid
        started = time.monotonic()
        assert launch.stop(home, "none", timeout=0.5) is True
        assert time.monotonic() - started >= 0.5  # the time SIGTERM was given (a lower bound: never early)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        assert proc.stdout.read() == "term\n"  # SIGTERM came first; only the kill after it ended the node
        assert launch.process_state(home)["exit"]["stopped_by"] == "SIGKILL"
        assert launch.running_pid(home) is None and not Path(f"/proc/{proc.pid}/cmdline").exists()
    finally:
        proc.kill()
        proc.wait()
