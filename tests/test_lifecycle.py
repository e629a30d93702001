"""The node's lifecycle in-process: the log file (rotation, levels, reading it back and following it
across a rotation), the home's lock and pid file, the log-level action, the commands' grammar.
Starting and stopping real processes: tests/test_lifecycle_process.py."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from pathlib import Path

import pytest

from meshnode.app import actor
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base import node_log
from meshnode.base.config import load_config
from meshnode.base.errors import ConfigError, MeshnodeError
from meshnode.faces.cli import build_parser, main
from meshnode.faces.cli.lifecycle import LevelFilter, follow, last_lines, rotated
from meshnode.store.home import running

T = "2026-01-02 03:04:05,678"


def _record(level: str, text: str) -> str:
    return f"{T} {level} meshnode.test: {text}"


@pytest.fixture
def root_logging():
    """The root logger's level and handlers as they were, after the test."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield root
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_the_log_file_rotates_at_its_size_and_keeps_its_count(tmp_path, root_logging):
    handler = node_log.attach_file(tmp_path, max_bytes=400, backups=2)
    root_logging.setLevel(logging.INFO)
    for i in range(40):
        logging.getLogger("meshnode.test").info("line %02d %s", i, "x" * 40)
    handler.flush()
    files = rotated(tmp_path / node_log.LOG_FILE)
    assert [p.name for p in files] == ["node.log.2", "node.log.1", "node.log"]
    assert all(p.stat().st_size <= 400 for p in files)
    assert (tmp_path / "logs").stat().st_mode & 0o777 == 0o700
    last = (tmp_path / node_log.LOG_FILE).read_text().splitlines()[-1]
    assert node_log.record_level(last) == "INFO" and "line 39" in last


def test_a_record_is_never_written_twice_into_the_file_stderr_is(tmp_path, root_logging, monkeypatch):
    """A child started with its output appended to node.log: the stderr handler goes."""
    (tmp_path / "logs").mkdir()
    with open(tmp_path / node_log.LOG_FILE, "a", encoding="utf-8") as stderr:
        monkeypatch.setattr("sys.stderr", stderr)
        root_logging.handlers[:] = [logging.StreamHandler(stderr)]
        handler = node_log.attach_file(tmp_path, max_bytes=10_000, backups=1)
        root_logging.setLevel(logging.INFO)
        logging.getLogger("meshnode.test").info("once")
        handler.flush()
    assert (tmp_path / node_log.LOG_FILE).read_text().count("once") == 1


def test_a_file_only_logger_reaches_the_file_and_not_stderr(tmp_path, root_logging, capsys):
    root_logging.handlers[:] = [logging.StreamHandler()]  # stderr, as the command line has it
    handler = node_log.attach_file(tmp_path, max_bytes=10_000, backups=1)
    node_log.file_only("meshnode.test.end", handler).error("the end")
    handler.flush()
    assert "the end" in (tmp_path / node_log.LOG_FILE).read_text()
    assert "the end" not in capsys.readouterr().err


def test_set_level_says_what_it_was(root_logging):
    root_logging.setLevel(logging.INFO)
    assert node_log.set_level("debug") == "info"
    assert node_log.level() == "debug" and logging.getLogger("meshnode.x").isEnabledFor(logging.DEBUG)
    with pytest.raises(ValueError):
        node_log.set_level("loud")


def test_level_filter_keeps_a_traceback_with_its_record_and_drops_the_banner():
    lines = ["did:      did:key:z6Mk", _record("INFO", "up"), _record("ERROR", "boom"), "Traceback (most recent call last):",
             "  ValueError: x", _record("DEBUG", "detail"), _record("WARNING", "odd"), _record("CRITICAL", "down")]
    keep = LevelFilter("warning")
    assert [line for line in lines if keep(line)] == [lines[2], lines[3], lines[4], lines[6], lines[7]]
    assert [line for line in lines if LevelFilter(None)(line)] == lines


def test_last_lines_read_the_rotated_files_newest_first(tmp_path):
    log = tmp_path / "node.log"
    (tmp_path / "node.log.2").write_text("".join(_record("INFO", f"a{i}") + "\n" for i in range(3)))
    (tmp_path / "node.log.1").write_text(_record("WARNING", "b0") + "\n" + _record("INFO", "b1") + "\n")
    log.write_text(_record("INFO", "c0") + "\n" + _record("ERROR", "c1") + "\n")
    (tmp_path / "node.log.x").write_text("not a rotation\n")
    files = rotated(log)
    assert [p.name for p in files] == ["node.log.2", "node.log.1", "node.log"]
    assert [line[-2:] for line in last_lines(files, 3, None)] == ["b1", "c0", "c1"]
    assert [line[-2:] for line in last_lines(files, 10, None)] == ["a0", "a1", "a2", "b0", "b1", "c0", "c1"]
    assert [line[-2:] for line in last_lines(files, 2, "warning")] == ["b0", "c1"]
    assert last_lines(files, 0, None) == []


def test_follow_reads_on_across_a_rotation(tmp_path):
    """What was written just before the rotation, then the new file from its start: nothing lost."""
    log = tmp_path / "node.log"
    log.write_text(_record("INFO", "old") + "\n")
    seen: list[str] = []
    with open(log, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        with open(log, "a") as writer:
            writer.write(_record("INFO", "before") + "\n")
            writer.flush()
            os.rename(log, tmp_path / "node.log.1")  # as RotatingFileHandler does
            writer.write(_record("INFO", "last of the old file") + "\n")
        log.write_text(_record("WARNING", "new file") + "\n" + "  its detail\n" + _record("INFO", "par"))
        follow(log, fh, LevelFilter(None), seen.extend, polls=6)
    assert [line.split(": ", 1)[-1] for line in seen] == ["before", "last of the old file", "new file", "  its detail"]


def test_follow_waits_for_a_log_that_does_not_exist_yet(tmp_path):
    log = tmp_path / "node.log"
    seen: list[str] = []
    follow(log, None, LevelFilter("warning"), seen.extend, polls=1)
    log.write_text(_record("INFO", "quiet") + "\n" + _record("ERROR", "loud") + "\n")
    follow(log, None, LevelFilter("warning"), seen.extend, polls=3)
    assert seen == [_record("ERROR", "loud")]


def test_the_home_is_held_by_one_process_and_a_stale_pid_file_is_replaced(tmp_path):
    assert running.holder(tmp_path) is None
    (tmp_path / "run").mkdir()
    (tmp_path / running.PID_FILE).write_text("999999999\n")  # a node that died: no one holds the lock
    assert running.holder(tmp_path) is None
    held = running.hold(tmp_path)
    try:
        assert held.stale_pid == 999999999
        assert running.holder(tmp_path) == os.getpid() == running.read_pid(tmp_path)
        with pytest.raises(MeshnodeError) as info:
            running.hold(tmp_path)  # a second open file description: refused as another process would be
        assert info.value.code == "node_running" and f"pid {os.getpid()}" in info.value.reason
    finally:
        held.release()
    assert running.holder(tmp_path) is None and not (tmp_path / running.PID_FILE).exists()


async def test_log_level_changes_the_running_node_s_level_for_the_person_only(root_logging):
    root_logging.setLevel(logging.INFO)
    live = App(store=None, key=None, mesh=object())
    got = await dispatch(live, actor.person("cli"), "log_level", {"level": "debug"})
    assert got == {"level": "debug", "was": "info", "persisted": False}
    assert root_logging.level == logging.DEBUG
    assert (await dispatch(live, actor.person("cli"), "log_level", {}))["level"] == "debug"
    with pytest.raises(MeshnodeError) as info:
        await dispatch(live, actor.AGENT, "log_level", {"level": "error"})
    assert info.value.code == "not_allowed"
    with pytest.raises(MeshnodeError) as info:
        await dispatch(live, actor.person("cli"), "log_level", {"level": "loud"})
    assert info.value.code == "bad_level" and "debug, info, warning, error" in info.value.reason
    with pytest.raises(MeshnodeError) as info:
        await dispatch(App(store=None, key=None), actor.person("cli"), "log_level", {"level": "error"})
    assert info.value.code == "node_not_running"
    assert root_logging.level == logging.DEBUG  # none of the refusals changed it


def test_the_commands_grammar():
    args = build_parser("logs").parse_args(["logs", "-f", "-n", "7", "--level", "warning"])
    assert (args.follow, args.lines, args.level) == (True, 7, "warning")
    assert build_parser("stop").parse_args(["stop"]).timeout == 30.0
    assert build_parser("start").parse_args(["start", "--timeout", "5"]).timeout == 5.0
    assert build_parser("log-level").parse_args(["log-level"]).level is None
    assert build_parser("run").parse_args(["run"]).detached is False


@pytest.mark.parametrize("argv", [["stop", "--timeout", "soon"], ["stop", "--timeout", "0"], ["logs", "-n", "-3"],
                                  ["logs", "--level", "loud"], ["log-level", "loud"]])
def test_bad_arguments_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and "error: argument" in capsys.readouterr().err


def test_logs_on_a_stopped_home(tmp_path, capsys, root_logging):
    assert main(["--home", str(tmp_path), "init"]) == 0
    (tmp_path / "logs").mkdir(exist_ok=True)
    (tmp_path / node_log.LOG_FILE).write_text("".join(_record(level, f"r{i}") + "\n" for i, level in
                                                     enumerate(["INFO", "WARNING", "INFO", "ERROR", "DEBUG"])))
    capsys.readouterr()
    assert main(["--home", str(tmp_path), "logs", "-n", "2", "--level", "warning"]) == 0
    assert [line[-2:] for line in capsys.readouterr().out.splitlines()] == ["r1", "r3"]
    (tmp_path / node_log.LOG_FILE).unlink()
    assert main(["--home", str(tmp_path), "logs"]) == 1
    assert "no log at" in capsys.readouterr().err
    assert main(["--home", str(tmp_path / "none"), "logs"]) == 1  # not a home: said, nothing made
    assert "not a node's home" in capsys.readouterr().err and not (tmp_path / "none").exists()


def test_stop_and_log_level_on_a_home_where_nothing_runs(tmp_path, capsys, root_logging):
    assert main(["--home", str(tmp_path), "init"]) == 0
    capsys.readouterr()
    assert main(["--home", str(tmp_path), "stop"]) == 3
    assert capsys.readouterr().out.startswith("not running: no node runs in")


@pytest.mark.parametrize("text, why", [("[log]\nfile_kib = 1\n", "log.file_kib"), ("[log]\nfiles = 0\n", "log.files")])
def test_log_file_settings_are_checked(tmp_path, text, why):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert why in info.value.reason


def test_the_default_libp2p_port_is_not_kubo_s():
    """tcp/4001 is kubo's swarm port; 7822 is unassigned (IANA) and no common daemon's."""
    assert load_config(Path("/nonexistent-home"), environ={}).get("net", "listen") == ["/ip4/0.0.0.0/tcp/7822"]


def test_logs_follow_ends_when_its_reader_has_gone(tmp_path):
    """`meshnode logs -f | head -3` on a quiet log: head is done, so is the command (it waited for
    the next line before); a reader still there keeps it following."""
    log = tmp_path / node_log.LOG_FILE
    log.parent.mkdir()
    log.write_text("".join(_record("INFO", f"r{i}") + "\n" for i in range(5)))
    code = ("import sys; from pathlib import Path; from meshnode.faces.cli import lifecycle as l;"
            f" from meshnode.base import node_log; p = Path({str(log)!r});"
            " fh = open(p, 'rb'); fh.seek(0, 2);"
            " l.follow(p, fh, l.LevelFilter(None), print, gone=l._reader_gone); print('ended', file=sys.stderr)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes
    assert proc.wait(timeout=30) == 0
    assert proc.stderr.read().decode().strip() == "ended"
