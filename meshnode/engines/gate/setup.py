"""The action gate as the configuration describes it (``[gate]``), for the node and the CLI."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from meshnode.base.config import Config
from meshnode.engines.gate import GateError, outbound, runner, sandbox, scratch
from meshnode.engines.gate.gate import GateSettings
from meshnode.engines.gate.jail import Jail
from meshnode.engines.gate.tools import risk_policy


def workspace(config: Config) -> Path:
    """The agent's workspace folder (made when missing)."""
    path = config.path("gate", "workspace")
    path.mkdir(parents=True, exist_ok=True)
    return path


def jail(config: Config) -> Jail:
    return Jail([workspace(config)])


def command_policy(config: Config) -> runner.CommandPolicy:
    gate = config.values["gate"]
    return runner.policy_from_config(
        gate["programs"] or runner.DEFAULT_PROGRAMS, timeout_s=float(gate["command_timeout_seconds"]),
        max_output_bytes=int(gate["max_output_kib"]) * 1024, cpu_seconds=int(gate["cpu_seconds"]),
        memory_bytes=int(gate["memory_mb"]) * 1024 * 1024, max_processes=int(gate["max_processes"]),
        network=bool(gate["network"]))


def scratch_dir(config: Config) -> Path:
    """Where commands' scratch copies live: it must be reachable by the unprivileged user commands
    run as, so by default a folder in the system's temporary directory, not the node's home."""
    raw = config.values["gate"]["scratch"]
    path = Path(raw) if raw else Path(tempfile.gettempdir()) / f"meshnode-scratch-{os.geteuid()}"
    path.mkdir(mode=0o711, parents=True, exist_ok=True)
    st = os.lstat(path)  # in a shared temporary directory, someone else may have made it first
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise GateError("bad_scratch", f"{path} is not a folder of this user's; set [gate] scratch to another")
    os.chmod(path, 0o711)  # others may pass through (commands run as an unprivileged user), not list it
    # one folder per node home, made by the first command that runs (scratch.prepare)
    return path / hashlib.sha256(str(config.home).encode()).hexdigest()[:16]


def clear_leftovers(folder: Path) -> tuple[list[int], int]:
    """What a crashed run of this node left behind (its own folder only): sandboxed processes
    still running, killed first (their pids), then scratch copies (how many were removed)."""
    killed = sandbox.kill_leftovers(scratch.records_folder(folder))
    gone = 0
    if not folder.is_dir():
        return killed, 0
    for entry in folder.glob("scratch-*"):
        shutil.rmtree(entry, ignore_errors=True)
        gone += 1
    return killed, gone


def settings(config: Config, session: str = "core") -> GateSettings:
    gate = config.values["gate"]
    return GateSettings(
        jail=jail(config), commands=command_policy(config),
        risk=risk_policy(dict(gate["risk"]), list(gate["risk_rules"]), list(gate["http_hosts"])),
        scratch_dir=scratch_dir(config), session=session, loop_window=int(gate["loop_window"]),
        loop_repeats=int(gate["loop_repeats"]), max_calls_per_task=int(gate["max_calls_per_task"]),
        calls_quiet_ms=int(float(gate["calls_quiet_seconds"]) * 1000),
        outbound_confirm=outbound.confirm_policy(list(gate["outbound_confirm"])),
        confirm_ttl_ms=int(float(gate["confirm_hours"]) * 3600 * 1000))
