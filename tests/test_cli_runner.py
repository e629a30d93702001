"""The in-process CLI runner of the tests (tests/cli_runner.py): a command leaves the process as it
found it, and runs from an async test too (its trio.run on a thread of its own)."""

from __future__ import annotations

import logging
import os
import sys

from cli_runner import run_cli_in_process


def test_a_command_leaves_the_process_as_it_found_it(home, fake_user_home):
    root = logging.getLogger()
    before = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, list(root.handlers), root.level,
              logging.getLogger("meshnode").level)
    mask = os.umask(0o022)
    os.umask(mask)
    result = run_cli_in_process(["--home", home, "--log-level", "debug", "note", "add", "hello"], fake_user_home,
                                env={"MESHNODE_NODE_NAME": "elsewhere"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("did:hmp:container:")
    assert "MESHNODE_NODE_NAME" not in os.environ
    after = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, list(root.handlers), root.level,
             logging.getLogger("meshnode").level)
    assert after == before
    assert os.umask(mask) == mask  # the CLI set 077 for its call


def test_the_environment_is_the_scrubbed_one(home, fake_user_home, monkeypatch):
    monkeypatch.setenv("MESHNODE_NODE_NAME", "from the developer's shell")
    info = run_cli_in_process(["--home", home, "status", "--json"], fake_user_home)
    assert '"name": "test"' in info.stdout
    named = run_cli_in_process(["--home", home, "status", "--json"], fake_user_home, env={"MESHNODE_NODE_NAME": "x"})
    assert '"name": "x"' in named.stdout


def test_logging_goes_to_each_calls_own_stderr(home, fake_user_home, monkeypatch):
    """basicConfig binds a handler to the stderr of the call: the next call logs to its own (no
    command logs without a node, so `status` here logs one warning after its work)."""
    from meshnode.faces.cli import node as cli_node

    real = cli_node.cmd_status

    def logging_status(args):
        code = real(args)
        logging.getLogger("meshnode.test").warning("status done")
        return code

    monkeypatch.setattr(cli_node, "cmd_status", logging_status)
    for _ in range(2):
        result = run_cli_in_process(["--home", home, "status"], fake_user_home)
        assert result.returncode == 0, result.stderr
        assert [line.split(" ", 2)[2] for line in result.stderr.splitlines()] == [
            "WARNING meshnode.test: status done"]


async def test_a_command_that_runs_trio_from_an_async_test(home, fake_user_home):
    """``reactor scan --once`` calls trio.run: inside the test's loop it runs on a thread."""
    result = run_cli_in_process(["--home", home, "reactor", "scan", "--once", "--dry-run", "--json"], fake_user_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout.lstrip().startswith(("{", "["))
