"""CLI edge cases found in review: races, hostile text, permissions, locked databases."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys

from cli_runner import run_node_until_signal
from clienv import cli_env
from test_cli import HUNG_S, assert_clean_failure, db_path, one_error_line


def test_two_concurrent_inits_never_replace_each_others_key(tmp_path, fake_user_home):
    home = tmp_path / "h"
    env = cli_env(fake_user_home)
    procs = [subprocess.Popen([sys.executable, "-m", "meshnode", "--home", str(home), "init"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    winners = [out for code, out, _err in results if code == 0]
    assert len(winners) >= 1
    printed = {line.split()[1] for out in winners for line in out.splitlines() if line.startswith("did:")}
    assert len(printed) == 1, results  # whoever "won", everyone who said created names the same key
    key_file = (home / "keys" / "node.key").read_text()
    assert printed.pop() in key_file
    for code, _out, err in results:
        assert "Traceback" not in err


def test_init_on_a_file_fails_cleanly(tmp_path, run_cli):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert_clean_failure(run_cli("--home", not_a_dir, "init"))


def test_init_with_a_bad_name_writes_nothing(tmp_path, run_cli):
    home = tmp_path / "h"
    result = run_cli("--home", home, "init", "--name", "bad\nname")
    assert "printable" in one_error_line(result)
    assert not (home / "config.toml").exists()
    assert run_cli("--home", home, "init", "--name", "good").returncode == 0


def test_files_a_node_writes_are_private(home):
    for path in (db_path(home), home / "config.toml", home / "keys" / "node.key"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert stat.S_IMODE(db_path(home).parent.stat().st_mode) & 0o077 == 0


def test_note_list_escapes_terminal_control_sequences(home, run_cli):
    hostile = "hi \x1b]0;pwned\x07\x1b[2J \u202eevil"
    assert run_cli("--home", home, "note", "add", hostile).returncode == 0
    listed = run_cli("--home", home, "note", "list")
    assert listed.returncode == 0
    assert "\x1b" not in listed.stdout and "\u202e" not in listed.stdout and "\x07" not in listed.stdout
    assert "\\u001b]0;pwned" in listed.stdout


def test_init_exist_ok_encrypt_tells_the_truth(home, run_cli):
    result = run_cli("--home", home, "init", "--exist-ok", "--encrypt",
                     env={"MESHNODE_KEY_PASSPHRASE": "long enough passphrase"})
    assert result.returncode == 0
    assert "(not encrypted)" in result.stdout
    assert "kept as it is" in result.stderr


def test_note_add_with_invalid_unicode_fails_cleanly(home, run_cli):
    """Bytes that are not UTF-8 in argv arrive as Python decodes them (surrogate escapes)."""
    result = run_cli("--home", home, "note", "add", os.fsdecode(b"bad \xff byte"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr


def test_a_locked_database_is_one_clear_line_and_does_not_slow_shutdown(home, fake_user_home, monkeypatch):
    """Another process holds the write lock as the node stops: the stop is recorded with a busy
    timeout of its own, far shorter than the store's (the bug this guards against waited out the
    store's 10 s), its failure is one warning, and the node still exits 0."""
    from meshnode.node import run as node_module
    from meshnode.store.database import BUSY_TIMEOUT_MS

    stops = []
    real = node_module._heartbeat

    def heartbeat(db, name, state, busy_timeout_ms=None):
        if state == "stopped":
            stops.append(busy_timeout_ms)
        return real(db, name, state, busy_timeout_ms)

    monkeypatch.setattr(node_module, "_heartbeat", heartbeat)
    # the node writes now and then: the locker waits its turn
    locker = sqlite3.connect(db_path(home), timeout=10, check_same_thread=False, isolation_level=None)
    try:
        result, out = run_node_until_signal(["--home", home], fake_user_home, signum=signal.SIGINT, hung_s=HUNG_S,
                                            then=lambda: locker.execute("BEGIN IMMEDIATE"))
    finally:
        locker.close()
    assert result.returncode == 0, result.stderr
    assert stops == [node_module.STOP_BUSY_TIMEOUT_MS]
    assert node_module.STOP_BUSY_TIMEOUT_MS * 10 <= BUSY_TIMEOUT_MS
    assert "could not record the stop" in result.stderr and "busy" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert out.splitlines()[-1] == "stopped"
