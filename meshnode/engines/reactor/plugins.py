"""Plug-in adapters (design 4.1): an operator's command or entry point printing events.

``parse_lines`` is pure: it validates each JSON line, prefixes type and key with the adapter's
name (a plug-in cannot collide with or suppress a built-in event), caps the severity and the
line count, and counts invalid lines keeping the first error. ``run_plugin`` runs a command
through the gate's no-shell runner (its sandbox, allowlist of one program, limits), or an
entry point in a worker thread, under a timeout; a failed or timed-out run keeps the valid
lines printed before the end.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from meshnode.engines.gate import GateError
from meshnode.engines.gate.runner import NOBODY_UID, SEARCH_PATH, CommandPolicy, ProgramRule, run_command

if TYPE_CHECKING:
    from meshnode.engines.reactor.types import Event

MAX_LINES = 1000
MAX_AT_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z: the last time the core can print as a date
TIMEOUT_S = 20.0
MAX_STDOUT = 1024 * 1024
STDERR_KEPT = 2048
ROUTES = ("agent", "mentor", "operator", "coordinator")
TRACE_KINDS = ("ack", "task_update", "message", "receipt", "heartbeat", "blocker", "decision", "vote", "none")
DEFAULT_TRACE = ("message", "task_update", "blocker")
_TYPE = re.compile(r"[a-z0-9_.]{1,40}")
_NAME = re.compile(r"[a-z0-9_-]{1,32}")
_SEVERITY = {"P1": 1, "P2": 2, "P3": 3, "P4": 4}
_LIMITS = {"subject": 200, "dedupe_key": 160, "summary": 200}


class LineError(ValueError):
    """Why one printed line is not an event."""


@dataclass
class Parsed:
    events: list = field(default_factory=list)      # list[Event]
    invalid: int = 0
    first_error: str = ""
    dropped: int = 0                                # lines beyond MAX_LINES
    errors: list[str] = field(default_factory=list)


@dataclass
class PluginRun:
    name: str
    events: list = field(default_factory=list)      # list[Event]
    valid: int = 0
    invalid: int = 0
    dropped: int = 0                                # lines beyond MAX_LINES
    first_error: str = ""
    failed: bool = False                            # non-zero exit, timeout, crash, refused
    exit: str = "ok"                                # ok | error | timeout
    stderr: str = ""                                # at most 2 KiB, for `reactor status`
    duration_s: float = 0.0


# --- pure parsing -------------------------------------------------------------------------------


def parse_lines(adapter: str, text: str, cfg_adapter: Mapping, now_ms: int) -> tuple[list[Event], list[str]]:
    """The events of a plug-in's output and the errors: one ``line N: reason`` per invalid line
    (the first is what ``reactor status`` shows), then, if lines beyond MAX_LINES were dropped,
    one ``dropped N lines beyond 1000``."""
    p = parse_output(adapter, text, cfg_adapter, now_ms)
    return p.events, p.errors + ([f"dropped {p.dropped} lines beyond {MAX_LINES}"] if p.dropped else [])


def parse_output(adapter: str, text: str, cfg_adapter: Mapping, now_ms: int) -> Parsed:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return parse_items(adapter, ((n, _load(line)) for n, line in lines[:MAX_LINES]), cfg_adapter, now_ms,
                       dropped=max(0, len(lines) - MAX_LINES))


def _load(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError as exc:
        return LineError(f"not JSON ({exc.msg})")
    except RecursionError:  # a line of nested brackets
        return LineError("not JSON (nested too deeply)")


def parse_items(adapter: str, items, cfg_adapter: Mapping, now_ms: int, *, dropped: int = 0) -> Parsed:
    """Validate numbered objects (a command's JSON lines, an entry point's dicts)."""
    if not _NAME.fullmatch(adapter):
        raise ValueError(f"adapter name {adapter!r} must match [a-z0-9_-]{{1,32}}")
    cap = _SEVERITY.get(str(cfg_adapter.get("max_severity", "P2")), 2)
    out = Parsed(dropped=dropped)
    for n, obj in items:
        try:
            if isinstance(obj, LineError):
                raise obj
            out.events.append(event_of(adapter, obj, cap, now_ms, cfg_adapter))
        except LineError as exc:
            out.invalid += 1
            out.errors.append(f"line {n}: {exc}")
            out.first_error = out.first_error or out.errors[-1]
    return out


def event_of(adapter: str, obj: Any, cap: int, now_ms: int, cfg_adapter: Mapping | None = None) -> Event:
    """One validated object as an ``ext.<adapter>.<type>`` Event; LineError naming the field."""
    from meshnode.engines.reactor.types import Event, Severity, TraceKind

    if not isinstance(obj, dict):
        raise LineError(f"a line must be a JSON object, not {type(obj).__name__}")
    etype = _text(obj, "event_type")
    if not _TYPE.fullmatch(etype):
        raise LineError(f"event_type {etype[:50]!r} must match [a-z0-9_.]{{1,40}}")
    subject, key, summary = _text(obj, "subject"), _text(obj, "dedupe_key"), _text(obj, "summary")
    severity = _SEVERITY.get(obj.get("severity")) if isinstance(obj.get("severity"), str) else None
    if severity is None:
        raise LineError(f"severity {str(obj.get('severity'))[:20]!r} must be one of P1, P2, P3, P4")
    agent = obj.get("agent", obj.get("owner", (cfg_adapter or {}).get("agent", "self")))
    if not isinstance(agent, str) or not 0 < len(agent) <= 200:
        raise LineError("agent (or owner) must be a name or id of 1 to 200 characters")
    route = obj.get("suggested_route", "agent")
    if route not in ROUTES:
        raise LineError(f"suggested_route must be one of {', '.join(ROUTES)}")
    kinds = obj.get("required_trace", list(DEFAULT_TRACE))
    if (not isinstance(kinds, list) or not kinds or len(kinds) > len(TRACE_KINDS)
            or any(k not in TRACE_KINDS for k in kinds)):
        raise LineError(f"required_trace must be a non-empty list of {', '.join(TRACE_KINDS)}")
    refs = obj.get("refs", {})
    if (not isinstance(refs, dict) or len(refs) > 10
            or any(not isinstance(k, str) or len(k) > 40 or type(v) not in (str, int)
                   or (type(v) is str and len(v) > 200) or (type(v) is int and not -2**63 <= v < 2**63)
                   for k, v in refs.items())):
        raise LineError("refs must be a flat object of at most 10 keys (text <= 200 or 64-bit integer values)")
    at_ms = _at(obj["at"]) if "at" in obj else now_ms
    return Event(event_type=f"ext.{adapter}.{etype}", subject=subject, agent=agent,
                 severity=Severity(max(severity, cap)), dedupe_key=f"ext:{adapter}:{key}",
                 suggested_route=route, required_trace=tuple(TraceKind(k) for k in dict.fromkeys(kinds)),
                 at_ms=at_ms, source=adapter, summary=summary, refs=dict(refs))


def _text(obj: dict, name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise LineError(f"{name} is required text")
    if len(value) > _LIMITS.get(name, 200):
        raise LineError(f"{name} is longer than {_LIMITS.get(name, 200)} characters")
    return value


def _at(value: Any) -> int:
    if not isinstance(value, str) or len(value) > 40:
        raise LineError("at must be an RFC 3339 time such as 2026-12-01T12:00:00Z")
    try:
        t = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise LineError(f"at {value!r} is not an RFC 3339 time") from None
    if t.tzinfo is None:
        raise LineError(f"at {value!r} has no time zone (add Z or +00:00)")
    at_ms = int(t.timestamp() * 1000)
    if not 0 <= at_ms <= MAX_AT_MS:  # the core prints it as a date: it must be one it can print
        raise LineError(f"at {value!r} is before 1970 or after 9999")
    return at_ms


# --- running ------------------------------------------------------------------------------------


def policy_for(command: list[str], spec: Mapping) -> tuple[list[str], CommandPolicy]:
    """The argv for the runner (the program by its bare name) and a policy allowing that one
    program, with the plug-in's limits (design 4.1: 20 s, 1 MiB of stdout)."""
    if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
        raise GateError("bad_argument", "command must be a non-empty list of strings")
    program = command[0]
    path = program if os.path.isabs(program) else shutil.which(program, path=SEARCH_PATH)
    if path is None or not os.path.isfile(path):
        raise GateError("no_program", f"the plug-in program {program!r} is not installed")
    name = os.path.basename(path)
    policy = CommandPolicy(programs={name: ProgramRule(name, os.path.realpath(path), max_args=256)},
                           timeout_s=float(spec.get("timeout_seconds", TIMEOUT_S)), max_output_bytes=MAX_STDOUT,
                           network=bool(spec.get("network", False)))
    return [name, *command[1:]], policy


async def run_plugin(name: str, spec: Mapping, home: Path, now_ms: int) -> PluginRun:
    """Run one plug-in once and parse what it printed. Never raises for the plug-in's own
    failures (refused command, exit, timeout, exception): those are ``failed`` with a reason."""
    run = PluginRun(name=name)
    started = trio.current_time()
    try:
        if "command" in spec:
            parsed = await _run_command(name, spec, home, now_ms, run)
        elif "entry_point" in spec:
            parsed = await _run_entry_point(name, spec, now_ms, run)
        else:
            raise GateError("bad_policy", "a plug-in needs command or entry_point")
    except (GateError, OSError) as exc:
        if isinstance(exc, OSError):
            exc = GateError("io_error", str(exc)[:200])
        run.failed, run.exit, run.first_error = True, "error", f"{exc.code}: {exc.reason}"
        parsed = None
    run.duration_s = trio.current_time() - started
    if parsed is not None:
        run.events, run.valid, run.invalid = parsed.events, len(parsed.events), parsed.invalid
        run.dropped = parsed.dropped
        run.first_error = run.first_error or parsed.first_error
    return run


def workspace_for(name: str, spec: Mapping) -> Path:
    """The plug-in's working folder (its /workspace in the sandbox). Not the node home, which holds
    the node's key and database: a folder of its own in the system's temporary directory, reachable
    by the unprivileged user commands run as when the node is root (as the gate's scratch folders)."""
    parent = Path(tempfile.gettempdir()) / f"meshnode-reactor-{os.geteuid()}"
    parent.mkdir(mode=0o711, parents=True, exist_ok=True)
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise GateError("bad_workspace", f"{parent} is not a folder of this user's")
    os.chmod(parent, 0o711)
    folder = Path(spec["workspace"]) if spec.get("workspace") else parent / name
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(folder, NOBODY_UID, NOBODY_UID, follow_symlinks=False)
    return folder


async def _run_command(name: str, spec: Mapping, home: Path, now_ms: int, run: PluginRun) -> Parsed:
    argv, policy = policy_for(spec["command"], spec)
    folder = await trio.to_thread.run_sync(workspace_for, name, spec)
    result = await run_command(argv, cwd=folder, policy=policy)
    run.stderr = result.stderr[-STDERR_KEPT:].decode("utf-8", errors="replace")
    if result.timed_out:
        run.failed, run.exit, run.first_error = True, "timeout", f"timed out after {policy.timeout_s:g} s"
    elif result.exit_code != 0:
        run.failed, run.exit = True, "error"
        run.first_error = f"exit {result.exit_code}" if result.exit_code is not None else str(result.killed)
    text = result.stdout.decode("utf-8", errors="replace")
    if run.failed and text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]  # the line cut by the end was never finished: not a line
    return parse_output(name, text, spec, now_ms)


async def _run_entry_point(name: str, spec: Mapping, now_ms: int, run: PluginRun) -> Parsed | None:
    target = spec["entry_point"]
    module, _, attr = str(target).partition(":")
    timeout = float(spec.get("timeout_seconds", TIMEOUT_S))

    def call() -> list:
        fn = importlib.import_module(module)
        for part in attr.split("."):
            fn = getattr(fn, part)
        return list(itertools.islice(iter(fn(now_ms)), MAX_LINES + 10_000))

    items: list = []
    try:
        with trio.move_on_after(timeout) as scope:
            items = await trio.to_thread.run_sync(call, abandon_on_cancel=True)
    except Exception as exc:  # the plug-in's own code failed: a failed run, never the node's crash
        run.failed, run.exit, run.first_error = True, "error", f"{type(exc).__name__}: {str(exc)[:200]}"
        return None
    if scope.cancelled_caught:
        run.failed, run.exit, run.first_error = True, "timeout", f"timed out after {timeout:g} s"
        return None
    return parse_items(name, enumerate(items[:MAX_LINES], start=1), spec, now_ms,
                       dropped=max(0, len(items) - MAX_LINES))
