"""Waking an external agent (design 9.2): its command, once, through the gate's sandboxed runner.

``[reactor.external.NAME]`` names the program (``command``, argv; the context file is appended)
and its ``timeout_seconds`` (1800). The program is allowed by that setting alone, not by the
gate's list of programs the LLM may run: the policy holds exactly this one program. It runs with
no shell, in the gate's sandbox (``gate.runner.run_command``): its own namespaces, no host file
outside its workspace, rlimits, uid 65534 when the node is root, killed with everything it
started at the timeout. Exit ``ok`` (status 0), ``timeout``, or ``error`` (any other status, a
signal, an output flood, or a refusal to start). The report is the last stdout line that is a JSON
object with report keys (``cognition.wake_report.last_report``; the first MAX_OUTPUT bytes are
read), whatever the exit.

What the sandbox changes (the design said "cwd the node home"): the command sees one folder, as
``/workspace`` (also its HOME), and only /usr, /bin, /sbin and /lib* besides, so

- the program must be installed there (``/usr/local/bin/wake-agent``, not ``/opt/...``);
- ``workspace = "job"`` (the default): the folder is ``<home>/reactor/wake/<job_id>/``, made for
  this run with a copy of the context file (and of its ``.json`` twin); the argument is
  ``/workspace/<file name>``. The node's key and database stay out of reach. The folder is kept
  after the run (what the agent left there can be read);
- ``workspace = "home"``: the node home itself, as the design says (for an agent that must use
  the node's files); the context file must lie inside it and is passed as
  ``/workspace/<its path in the home>``. The agent can then read (and, where permissions allow,
  write) the node's database and key: give this only to an agent trusted with the node.
  A node running as root must make the home usable by uid 65534, else the run is refused;
- the environment is PATH (/usr/bin:/bin), HOME (/workspace), LANG (C.UTF-8) and
  MESHNODE_REACTOR_JOB (the job id); nothing of the node's own environment;
- ``network`` (default true: an agent usually talks to its model over the network; false gives
  it no network at all) and ``memory_mb`` (2048) complete the limits; CPU time is bounded by
  the timeout.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from meshnode.engines.cognition.wake_report import last_report
from meshnode.engines.gate import GateError
from meshnode.engines.gate.mounts import READ_ONLY_TREES, WORKSPACE
from meshnode.engines.gate.runner import SEARCH_PATH, CommandPolicy, ProgramRule, run_command

log = logging.getLogger("meshnode.engines.reactor.external")

DEFAULT_TIMEOUT_S = 1800.0  # an agent run of half an hour: long work, still bounded
DEFAULT_MEMORY_MB = 2048  # an agent runtime (an interpreter, a model client) needs more than a tool
MAX_OUTPUT = 1024 * 1024  # stdout read for the report (more is counted, not kept)
WAKE_DIR = Path("reactor") / "wake"  # under the node home: context files and job workspaces
JOB_ENV = "MESHNODE_REACTOR_JOB"


class ExternalError(ValueError):
    """A setting of ``[reactor.external.NAME]`` that cannot be used; the message names it."""


def _within_trees(path: str) -> bool:
    return any(path == f"/{tree}" or path.startswith(f"/{tree}/") for tree in READ_ONLY_TREES)


def policy_for(name: str, spec: Mapping) -> tuple[list[str], CommandPolicy]:
    """The argv to give the runner (a bare program name first) and a policy allowing exactly it."""
    where = f"reactor.external.{name}"
    command = spec.get("command")
    if not isinstance(command, (list, tuple)) or not command or not all(isinstance(c, str) and c for c in command):
        raise ExternalError(f"{where}.command must be a non-empty list of strings")
    program = command[0]
    path = program if os.path.isabs(program) else shutil.which(program, path=SEARCH_PATH)
    if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise ExternalError(f"{where}.command: {program!r} is not an executable file"
                            + ("" if os.path.isabs(program) else f" in {SEARCH_PATH}"))
    if not (_within_trees(path) and _within_trees(os.path.realpath(path))):
        raise ExternalError(f"{where}.command: {path} is outside /usr, /bin, /sbin and /lib*, which is all the"
                            " sandbox shows a program; install it under /usr/local/bin")
    timeout = spec.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 1 <= timeout <= 86400:
        raise ExternalError(f"{where}.timeout_seconds must be between 1 and 86400")
    network = spec.get("network", True)
    if not isinstance(network, bool):
        raise ExternalError(f"{where}.network must be true or false")
    memory = spec.get("memory_mb", DEFAULT_MEMORY_MB)
    if isinstance(memory, bool) or not isinstance(memory, int) or not 64 <= memory <= 65536:
        raise ExternalError(f"{where}.memory_mb must be an integer from 64 to 65536")
    rule = ProgramRule(os.path.basename(path), path, max_args=len(command) + 1)
    policy = CommandPolicy(programs={rule.name: rule}, timeout_s=float(timeout), max_output_bytes=MAX_OUTPUT,
                           cpu_seconds=max(1, math.ceil(timeout)), memory_bytes=memory * 1024 * 1024,
                           network=network)
    return [rule.name, *command[1:]], policy


def workspace_for(name: str, spec: Mapping, context_path: Path, home: Path, job_id: str) -> tuple[Path, str]:
    """(the folder the command gets as /workspace, the context file's path as the command sees it)."""
    kind = spec.get("workspace", "job")
    home = Path(home).resolve()
    context_path = Path(context_path).resolve()
    if kind == "home":
        if not context_path.is_relative_to(home):
            raise ExternalError(f"reactor.external.{name}: with workspace = \"home\" the context file must lie in"
                                f" the node home ({context_path} does not)")
        return home, f"{WORKSPACE}/{context_path.relative_to(home).as_posix()}"
    if kind != "job":
        raise ExternalError(f"reactor.external.{name}.workspace must be \"job\" or \"home\"")
    if not job_id or "/" in job_id or job_id in (".", "..") or "\0" in job_id:
        raise ExternalError(f"job id {job_id[:64]!r} cannot name a folder")
    folder = home / WAKE_DIR / job_id
    folder.mkdir(parents=True, exist_ok=True)
    for source in (context_path, context_path.with_suffix(".json")):
        if source.is_file():
            shutil.copyfile(source, folder / source.name)
            os.chmod(folder / source.name, 0o644)
    if os.geteuid() == 0:  # the command runs as uid 65534: its folder must be its own
        os.chmod(folder, 0o777)
    return folder, f"{WORKSPACE}/{context_path.name}"


async def wake_external(name: str, spec: Mapping, context_path: Path, home: Path, job_id: str,
                        now_ms: int | None = None) -> tuple[str, dict | None]:
    """Run external agent ``name`` once for ``job_id``: (exit ok|timeout|error, its report or None).
    Never raises for the agent's or the setting's fault (logged, exit ``error``); cancelling the
    caller kills the agent."""
    try:
        argv, policy = policy_for(name, spec)
        if not Path(context_path).is_file():
            raise ExternalError(f"the context file {context_path} is missing")
        workspace, context_arg = workspace_for(name, spec, Path(context_path), Path(home), job_id)
        result = await run_command([*argv, context_arg], cwd=workspace, policy=policy, env={JOB_ENV: job_id})
    except (ExternalError, GateError, OSError) as exc:
        log.warning("external agent %s, job %s: not run: %s", name, job_id, getattr(exc, "reason", exc))
        return "error", None
    exit = "timeout" if result.timed_out else "ok" if result.exit_code == 0 else "error"
    report, why = last_report(result.stdout.decode("utf-8", errors="replace"), now_ms)
    if exit != "ok" or why:
        log.warning("external agent %s, job %s: %s (status %s%s)%s", name, job_id, exit, result.exit_code,
                    f", {result.killed}" if result.killed else "", f"; {why}" if why else "")
    return exit, report
