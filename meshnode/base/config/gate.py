"""``[gate]``: what the cognitive core may do to this host (its workspace, the programs it may run and
their limits, the budget of tool calls per piece of work) and which sends out of the node wait for a
person (``outbound_confirm``: the kinds of ``OUTBOUND_KINDS``, which gate/outbound.py acts on)."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

OUTBOUND = "outbound"  # the risk level of a send out of the node (gate/outbound.py)
OUTBOUND_KINDS = {  # kind -> (what it is, the command that does it)
    "public": ("a note to everyone", "note_add audience=public"),
    "friends": ("a note to all friends", "note_add audience=friends"),
    "stranger": ("a message to an agent that is not a friend", "send_message"),
    "friend": ("a message to a friend", "send_message"),
}
DEFAULT_OUTBOUND_CONFIRM = ("public", "stranger")
DEFAULTS: dict[str, Any] = {
    "workspace": "workspace",
    "programs": [],
    "network": False,
    "command_timeout_seconds": 30.0,
    "process_timeout_seconds": 3600.0,
    "cpu_seconds": 10,
    "memory_mb": 512,
    "max_processes": 64,
    "max_output_kib": 256,
    "scratch": "",
    "risk": {},
    "risk_rules": [],
    "http_hosts": [],
    "confirm_hours": 1.0,
    "max_calls_per_task": 200,
    "calls_quiet_seconds": 600.0,
    "outbound_confirm": list(DEFAULT_OUTBOUND_CONFIRM),
    "loop_window": 20,
    "loop_repeats": 3,
    "offer_tools": False,
}
NOTE = ("what the cognitive core may do to this host: its workspace folder, the programs it may run"
        " (empty: a small read-mostly default set), and their limits; the budget of tool calls per piece"
        " of work (max_calls_per_task, restarted after calls_quiet_seconds without calls); which sends out"
        " of the node wait for a person (outbound_confirm: public, friends, stranger, friend)")


def check(gate: dict) -> None:
    if not 1 <= gate["command_timeout_seconds"] <= 3600 or not 1 <= gate["process_timeout_seconds"] <= 7 * 86400:
        raise ConfigError("bad_config", "gate.command_timeout_seconds must be 1..3600 and"
                          " gate.process_timeout_seconds 1..604800")
    if not 1 <= gate["cpu_seconds"] <= 86400 or not 16 <= gate["memory_mb"] <= 65536 \
            or not 1 <= gate["max_processes"] <= 4096 or not 1 <= gate["max_output_kib"] <= 65536:
        raise ConfigError("bad_config", "gate limits: cpu_seconds 1..86400, memory_mb 16..65536,"
                          " max_processes 1..4096, max_output_kib 1..65536")
    if not 0.01 <= gate["confirm_hours"] <= 24 * 30 or not 1 <= gate["max_calls_per_task"] <= 100_000 \
            or not 2 <= gate["loop_window"] <= 1000 or not 1 <= gate["loop_repeats"] <= gate["loop_window"]:
        raise ConfigError("bad_config", "gate: confirm_hours 0.01..720, max_calls_per_task 1..100000,"
                          " loop_window 2..1000, loop_repeats 1..loop_window")
    if not 1 <= gate["calls_quiet_seconds"] <= 7 * 86400:
        raise ConfigError("bad_config", "gate.calls_quiet_seconds must be between 1 and 604800")
    problem = outbound_confirm_problem(gate["outbound_confirm"])
    if problem:
        raise ConfigError("bad_config", problem)


def outbound_confirm_problem(kinds: list) -> str | None:
    """Why ``[gate] outbound_confirm`` is wrong (None when every item is a kind of send)."""
    unknown = [k for k in kinds if not isinstance(k, str) or k not in OUTBOUND_KINDS]
    if unknown:
        return (f"gate.outbound_confirm: {', '.join(map(repr, unknown))[:200]}: kinds are"
                f" {', '.join(OUTBOUND_KINDS)}")
    return None
