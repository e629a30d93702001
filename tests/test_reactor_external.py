"""External agents woken by the reactor (reactor/external.py): a real program run through the gate's
sandboxed runner (python3 -c SCRIPT, the context file appended), its exit and its final report."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
import trio

from meshnode.engines.reactor.external import JOB_ENV, WAKE_DIR, policy_for, wake_external

REPORT = {"processed_messages": [412], "task_updates": [], "outgoing_messages": ["n418"], "blocked": False,
          "needs_human": False, "next_check_at": "2026-12-02T12:00:00Z"}


def agent(body: str) -> list[str]:
    """An external agent: python3 running ``body`` (sys.argv[1] is the context file)."""
    return ["python3", "-c", textwrap.dedent(body)]


def setup(tmp_path):
    home = tmp_path / "home"
    wake = home / WAKE_DIR
    wake.mkdir(parents=True)
    context = wake / "job-1.md"
    context.write_text("# Wake\nreply to note 412\n")
    (wake / "job-1.json").write_text('{"job_id": "job-1"}')
    return home, context


def run(spec, context, home, job="job-1"):
    return trio.run(wake_external, "scout", spec, context, home, job, 1_800_000_000_000)


def test_the_agent_reads_its_context_in_a_reduced_environment_and_its_last_report_line_counts(tmp_path):
    home, context = setup(tmp_path)
    spec = {"command": agent(f"""
        import json, os, sys
        text = open(sys.argv[1]).read()
        twin = os.path.exists(sys.argv[1][:-3] + ".json")
        seen = {{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd(), "text": text, "twin": twin,
                "home_db": os.path.exists("/workspace/data")}}
        open("seen.json", "w").write(json.dumps(seen))
        print('{{"processed_messages": [1]}}')  # an earlier report line: the last one counts
        print("working...")
        print({json.dumps(json.dumps(REPORT))})
        print("done, bye")
        """), "timeout_seconds": 20}
    (home / "data").mkdir()  # the node's own files are not in the agent's workspace
    assert run(spec, context, home) == ("ok", {**REPORT, "blocked_reason": ""})
    seen = json.loads((home / WAKE_DIR / "job-1" / "seen.json").read_text())
    assert seen["argv"] == ["/workspace/job-1.md"] and seen["cwd"] == "/workspace"
    assert seen["text"] == "# Wake\nreply to note 412\n" and seen["twin"] and not seen["home_db"]
    assert seen["env"] == {"PATH": "/usr/bin:/bin", "HOME": "/workspace", "LANG": "C.UTF-8", JOB_ENV: "job-1"}


def test_the_home_workspace_passes_the_context_path_inside_the_home(tmp_path):
    home, context = setup(tmp_path)
    if os.geteuid() == 0:
        os.chmod(home, 0o777)  # as root the command runs as uid 65534: the home must be usable by it
    spec = {"command": agent("""
        import os, sys
        print(sys.argv[1], os.path.exists("/workspace/reactor/wake/job-1.md"), file=sys.stderr)
        sys.exit(0 if sys.argv[1] == "/workspace/reactor/wake/job-1.md" and os.path.exists(sys.argv[1]) else 3)
        """), "workspace": "home"}
    assert run(spec, context, home) == ("ok", None)


def test_a_timeout_kills_the_agent(tmp_path):
    home, context = setup(tmp_path)
    spec = {"command": agent("""
        import os, subprocess, sys, time
        subprocess.Popen(["sleep", "60"])
        print('{"blocked": false}', flush=True)
        time.sleep(60)
        open(os.path.join(os.path.dirname(sys.argv[1]), "ended"), "w").close()
        """), "timeout_seconds": 1}
    exit, report = run(spec, context, home)
    assert exit == "timeout"
    assert not (home / WAKE_DIR / "job-1" / "ended").exists()  # killed: it never ran to its end
    assert report is not None and report["blocked"] is False  # what it printed before it was killed


def test_a_failing_agent_is_an_error_and_a_bad_report_is_none(tmp_path):
    home, context = setup(tmp_path)
    spec = {"command": agent("""
        import sys
        print('{"blocked": true, "blocked_reason": "no"}')
        sys.exit(2)
        """)}
    assert run(spec, context, home) == ("error", None)  # blocked needs a reason of 20 characters


def test_settings_that_cannot_run_are_an_error_not_a_crash(tmp_path):
    home, context = setup(tmp_path)
    assert run({"command": ["no-such-agent-anywhere"]}, context, home) == ("error", None)
    assert run({"command": agent("pass"), "workspace": "elsewhere"}, context, home) == ("error", None)
    assert run({"command": agent("pass")}, tmp_path / "missing.md", home) == ("error", None)
    with pytest.raises(ValueError, match="outside /usr"):
        tool = tmp_path / "agent.sh"
        tool.write_text("#!/bin/sh\n")
        tool.chmod(0o755)
        policy_for("scout", {"command": [str(tool)]})
    with pytest.raises(ValueError, match="timeout_seconds"):
        policy_for("scout", {"command": ["python3"], "timeout_seconds": 0})
    # the policy allows this one program, not the gate's list for the LLM
    argv, policy = policy_for("scout", {"command": ["python3", "-u"]})
    assert argv == ["python3", "-u"] and list(policy.programs) == ["python3"]


def test_the_runner_adds_variables_but_never_replaces_the_fixed_ones(tmp_path):
    from meshnode.engines.gate import GateError
    from meshnode.engines.gate.runner import run_command

    _, policy = policy_for("scout", {"command": ["python3"]})
    for env in ({"PATH": "/tmp"}, {"HOME": "/"}, {"lower": "x"}, {"X": "a\0b"}):
        with pytest.raises(GateError, match="environment variable"):
            trio.run(lambda: run_command(["python3", "-c", "pass"], cwd=tmp_path, policy=policy, env=env))
