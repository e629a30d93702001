"""The command runner (issue 7): allowlist, no shell, limits and a sandbox, with real processes.

A command sees only its own PID namespace (its /proc is that namespace's), so
it cannot tell the test its host pids. The ``namespaces`` fixture records each
command's PID namespace as ``spawn`` returns (a command that may end quickly
first reads its stdin, which is fed only after that), and ``in_namespace``
finds what still runs in it. No test sleeps to synchronise: a command that must
be running before the test acts tells it so through a FIFO.
"""

from __future__ import annotations

import json
import shutil
import socket
import textwrap

import pytest
import trio

from meshnode.engines.gate import GateError
from meshnode.engines.gate import runner, sandbox
from meshnode.engines.gate.runner import (
    DEFAULT_PROGRAMS,
    CommandResult,
    ProgramRule,
    check_command,
    policy_from_config,
    run_command,
)
from runnerlab import (GO, HOLD, ROOT, exists, fifo_line, in_namespace, needs_root, policy, python)

# --- refusals before anything runs -------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["sh", "-c", "id"], ["bash"], ["env", "ls"], ["xargs", "rm"],
    ["/bin/sh", "-c", "id"], ["./ls"], ["/usr/bin/ls"], ["../python3"],
])
def test_programs_off_the_list_or_given_as_paths_are_refused(argv):
    with pytest.raises(GateError) as caught:
        check_command(argv, policy())
    assert caught.value.code == "not_allowed"
    assert "ls" in caught.value.reason and "python3" in caught.value.reason  # names what is allowed


@pytest.mark.parametrize("argv", [
    [], "ls -l", ["ls", 3], ["echo", "a\0b"], ["echo"] * 66, ["echo", "x" * (runner.MAX_ARG_BYTES + 1)],
])
def test_malformed_argv_is_refused(argv):
    with pytest.raises(GateError) as caught:
        check_command(argv, policy())
    assert caught.value.code == "bad_argument"


@pytest.mark.parametrize("argv", [
    ["find", ".", "-exec", "rm", "{}", ";"], ["find", ".", "-execdir", "sh", ";"],
    ["find", ".", "-delete"], ["find", ".", "-fprint", "out"], ["find", ".", "-ok", "rm", ";"],
    ["sort", "-o", "out", "in"], ["sort", "-nro", "out"], ["sort", "--output=out"], ["sort", "--compress-program=sh"],
])
def test_argument_injection_is_refused(argv):
    with pytest.raises(GateError) as caught:
        check_command(argv, policy())
    assert caught.value.code == "bad_argument"


def test_allowed_commands_get_their_resolved_path():
    assert check_command(["find", ".", "-name", "*.py"], policy()) == [shutil.which("find", path=runner.SEARCH_PATH),
                                                                       ".", "-name", "*.py"]
    assert check_command(["sort", "-rn", "--check", "f"], policy())[1:] == ["-rn", "--check", "f"]


def test_policy_config_errors():
    cases = [
        (lambda: policy_from_config(["no-such-program-xyz"]), "no_program"),
        (lambda: policy_from_config(["/bin/ls"]), "no_program"),
        (lambda: policy_from_config(["ls"], timeout=3), "bad_policy"),
        (lambda: policy_from_config(["ls"], timeout_s=0), "bad_policy"),
        (lambda: policy_from_config(["ls"], run_as_uid=0), "bad_policy"),
        (lambda: policy_from_config(["ls"], max_processes="8"), "bad_policy"),
        (lambda: ProgramRule("ls", "/usr/bin/ls", deny_args=("(",)), "bad_policy"),
    ]
    for make, code in cases:
        with pytest.raises(GateError) as caught:
            make()
        assert caught.value.code == code
    assert "sh" not in policy().programs and set(policy().programs) == set(DEFAULT_PROGRAMS)


async def test_a_refused_command_runs_nothing(workspace):
    with pytest.raises(GateError):
        await run_command(["sh", "-c", "touch ran"], cwd=workspace, policy=policy())
    with pytest.raises(GateError) as caught:
        await run_command(["true"], cwd=workspace / "missing", policy=policy())
    assert caught.value.code == "bad_workspace"
    assert list(workspace.iterdir()) == []


# --- what runs, runs without a shell -------------------------------------------------


async def test_shell_metacharacters_are_plain_bytes(workspace):
    (workspace / "x").write_text("keep me")
    args = ["a; rm -rf x", "$(touch y)", "`touch z`", "|", "cat", "x", "&&", "id", ">", "w", "*"]
    result = await run_command(["echo", *args], cwd=workspace, policy=policy())
    assert result.exit_code == 0 and result.killed is None
    assert result.stdout == (" ".join(args) + "\n").encode()
    assert (workspace / "x").read_text() == "keep me"
    assert sorted(p.name for p in workspace.iterdir()) == ["x"]


async def test_stdin_exit_codes_and_find(workspace):
    (workspace / "notes.txt").write_text("hi")
    upper = "import sys; print(sys.stdin.read().upper())"
    result = await run_command(["python3", "-c", upper], cwd=workspace, policy=policy(), stdin=b"hello")
    assert result.stdout == b"HELLO\n"
    result = await run_command(["python3", "-c", upper], cwd=workspace, policy=policy())
    assert result.stdout == b"\n"  # no stdin given: /dev/null
    result = await run_command(["false"], cwd=workspace, policy=policy())
    assert (result.exit_code, result.killed, result.timed_out) == (1, None, False)
    result = await run_command(["find", ".", "-name", "*.txt"], cwd=workspace, policy=policy())
    assert result.stdout == b"./notes.txt\n"  # the glob reached find, no shell expanded it


async def test_environment_is_clean(workspace, monkeypatch):
    monkeypatch.setenv("MESHNODE_SECRET_TOKEN", "hunter2")
    result = await python("import json, os; print(json.dumps(dict(os.environ)))", workspace)
    assert json.loads(result.stdout) == {"PATH": "/usr/bin:/bin", "HOME": "/workspace", "LANG": "C.UTF-8"}
    result = await run_command(["cat", "/proc/self/environ"], cwd=workspace, policy=policy())
    assert b"hunter2" not in result.stdout and result.stdout.count(b"\0") == 3


@needs_root
async def test_runs_unprivileged_in_its_own_namespaces(workspace):
    code = textwrap.dedent("""\
        import os
        status = open('/proc/self/status').read()
        nnp = status.split('NoNewPrivs:')[1].split()[0]
        print(os.getuid(), os.geteuid(), os.getgid(), os.getgroups(), nnp, os.getpid())
        try:
            os.setuid(0)
            print('regained root')
        except PermissionError:
            print('cannot regain root')
        """)
    result = await python(code, workspace)
    assert result.stdout.decode().splitlines() == ["65534 65534 65534 [] 1 1", "cannot regain root"]


async def test_large_output_is_capped_and_flagged(workspace):
    cap = 1024 * 1024
    code = "import sys; sys.stdout.write('o' * 5_000_000); sys.stderr.write('e' * 3_000_000)"
    result = await python(code, workspace, max_output_bytes=cap)
    assert (result.exit_code, result.killed) == (0, None)
    assert result.stdout == b"o" * cap and result.stderr == b"e" * cap
    assert result.stdout_truncated and result.stderr_truncated
    small = await run_command(["echo", "hi"], cwd=workspace, policy=policy(max_output_bytes=cap))
    assert not small.stdout_truncated and not small.stderr_truncated


async def test_endless_output_is_stopped(workspace):
    result = await run_command(["yes"], cwd=workspace, policy=policy("yes", max_output_bytes=4096, timeout_s=30))
    assert result.killed is not None and result.killed.startswith("output flood")
    assert not result.timed_out and result.exit_code is None  # the flood stopped it, not its 30 s
    assert result.stdout == b"y\n" * 2048 and result.stdout_truncated


def test_summary_is_json_and_bounded():
    result = CommandResult(["/usr/bin/x"], 3, b"\xff" + b"a" * 10_000, b"boom", True, False, False, None, 1.23456)
    summary = result.summary(max_chars=1000)
    json.dumps(summary)
    assert summary["stdout"].startswith("\ufffd") and "characters omitted" in summary["stdout"]
    assert len(summary["stdout"]) + len(summary["stderr"]) <= 1000
    assert summary["stderr"] == "boom" and summary["stdout_truncated"] and not summary["stderr_truncated"]
    assert (summary["exit_code"], summary["duration_s"]) == (3, 1.235)


# --- time, processes, cancellation --------------------------------------------------------


async def test_timeout_kills_the_whole_namespace(workspace, namespaces):
    code = HOLD + textwrap.dedent("""\
        import os, time
        r, w = os.pipe()
        if os.fork() == 0:
            print('child', os.getpid(), flush=True)
            os.write(w, b'x')
            time.sleep(1000)
        os.read(r, 1)
        print('leader', os.getpid(), flush=True)
        time.sleep(1000)
        """)
    result = await python(code, workspace, stdin=GO, timeout_s=1)
    assert result.timed_out and result.killed == "timeout" and result.exit_code is None
    assert result.duration_s >= 1  # it had its time; what ended it is `killed`, and nothing is left below
    assert result.stdout == b"child 2\nleader 1\n"  # both ran, in the command's PID namespace
    assert in_namespace(namespaces[0]) == []


async def test_a_background_process_that_left_the_group_dies_with_the_command(workspace, namespaces):
    code = HOLD + textwrap.dedent("""\
        import os, time
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()  # out of the process group and session: killpg alone would miss it
            print('escapee', os.getpid(), os.getsid(0), flush=True)
            os.write(w, b'x')
            time.sleep(1000)
        os.read(r, 1)
        """)
    result = await python(code, workspace, stdin=GO, timeout_s=20)
    assert (result.exit_code, result.timed_out, result.killed) == (0, False, None)
    assert result.stdout == b"escapee 2 2\n"  # not timed out: the runner did not wait for the escapee
    assert in_namespace(namespaces[0]) == []


async def test_fork_bomb_is_contained(workspace, namespaces):
    code = HOLD + textwrap.dedent("""\
        import os
        def bomb():
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        forked = 0
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                print('limited after', forked, exc.errno, flush=True)
                break
            if pid == 0:
                bomb()
            forked += 1
        bomb()
        """)
    # A uid of its own, so nothing else running as nobody shares (or eats) the process budget.
    result = await python(code, workspace, stdin=GO, max_processes=8, timeout_s=2, cpu_seconds=5,
                          run_as_uid=64123 if ROOT else None)
    assert result.timed_out or result.killed
    limited = [line for line in result.stdout.decode().splitlines() if line.startswith("limited")]
    assert len(limited) == 1 and int(limited[0].split()[2]) < 8
    assert in_namespace(namespaces[0]) == []


async def test_cancelling_the_caller_kills_the_command(workspace, namespaces):
    code = textwrap.dedent("""\
        import os, time
        with open('ready', 'w') as ready:
            ready.write(f"leader {os.getpid()}\\n")
        time.sleep(1000)
        """)
    finished: list[CommandResult] = []
    with trio.fail_after(20):
        async with fifo_line(workspace / "ready") as line, trio.open_nursery() as nursery:

            async def run() -> None:
                finished.append(await python(code, workspace, timeout_s=60))

            nursery.start_soon(run)
            assert await line() == b"leader 1\n"
            running = in_namespace(await namespaces.first())
            assert len(running) == 1 and exists(running[0])
            nursery.cancel_scope.cancel()  # the command had 60 s: only the kill ends it within fail_after
    assert finished == []
    assert not exists(running[0]) and in_namespace(namespaces[0]) == []


# --- limits ----------------------------------------------------------------------------------


async def test_cpu_limit_kills_a_busy_loop(workspace):
    result = await python("while True: pass", workspace, cpu_seconds=1, timeout_s=20)
    assert not result.timed_out and result.exit_code is None
    assert result.killed is not None and result.killed.startswith("signal 9") and "CPU" in result.killed


async def test_memory_limit_fails_a_big_allocation(workspace):
    code = "a = bytearray(32 << 20); print('small ok', flush=True); b = bytearray(1 << 30)"
    result = await python(code, workspace, memory_bytes=256 << 20)
    assert result.stdout == b"small ok\n"
    assert result.exit_code == 1 and b"MemoryError" in result.stderr


async def test_file_size_limit(workspace):
    code = "open('big', 'wb').write(b'x' * (2 << 20))"
    result = await python(code, workspace, max_file_bytes=1 << 20)
    assert result.exit_code == 1 and b"File too large" in result.stderr
    assert (workspace / "big").stat().st_size == 1 << 20


async def test_network_is_off_unless_allowed(workspace):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')"
        off = await python(code, workspace)
        on = await python(code, workspace, network=True)
    assert off.exit_code == 1 and off.stdout == b"" and b"Network is unreachable" in off.stderr
    assert on.exit_code == 0 and on.stdout == b"connected\n"


async def test_no_isolation_means_no_run(workspace, monkeypatch):
    def refuse(flags: int) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(sandbox, "_unshare", refuse)  # as where namespaces are forbidden
    with pytest.raises(GateError) as caught:
        await python("open('ran', 'w')", workspace, network=True)
    assert caught.value.code == "no_isolation"
    assert not (workspace / "ran").exists()


@needs_root
async def test_spawn_and_workspace_failures_are_gate_errors(workspace, tmp_path):
    hidden = tmp_path / "tool"  # tmp_path is under a 0o700 directory: uid 65534 cannot reach it
    hidden.write_text("#!/bin/sh\necho ran\n")
    hidden.chmod(0o755)
    rules = {"tool": ProgramRule("tool", str(hidden))}
    with pytest.raises(GateError) as caught:
        await run_command(["tool"], cwd=workspace, policy=runner.CommandPolicy(programs=rules))
    assert caught.value.code == "spawn_failed"
    with pytest.raises(GateError) as caught:
        await run_command(["true"], cwd=tmp_path, policy=policy())
    assert caught.value.code == "bad_workspace" and "65534" in caught.value.reason


async def test_commands_run_concurrently_and_independently(workspace):
    results: dict[int, CommandResult] = {}

    async def one(n: int) -> None:
        results[n] = await python(f"import os; print({n}, os.getpid())", workspace)

    async with trio.open_nursery() as nursery:
        for n in range(4):
            nursery.start_soon(one, n)
    assert {n: r.stdout for n, r in results.items()} == {n: f"{n} 1\n".encode() for n in range(4)}
