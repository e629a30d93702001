"""The `[reactor]` settings as one frozen value, checked once at load (protocols/reactor.md 13).

``DEFAULTS`` holds the plain keys (scalars and lists); the section's defaults (``SECTION_DEFAULTS``)
add the sub-tables (``TABLES``: mentors, routes, external, adapters), empty. ``ReactorConfig.from_mapping``
checks every type and range and raises ``ValueError("reactor.<key> must ...")`` naming the
setting; ``check_reactor`` (at load) turns it into a ConfigError. Times keep the design's units (hours, seconds) as
floats so tests and the simulator can use seconds-scale windows; the ``*_ms`` properties are what
the core computes with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "scan_seconds": 60.0,
    "quiet_hours": 6.0,
    "stale_hours": 24.0,
    "dead_hours": 72.0,
    "unanswered_hours": 24.0,
    "stale_task_hours": 24.0,
    "consensus_wait_seconds": 120.0,
    "wake_cooldown_hours": 6.0,
    "nudge_cooldown_hours": 24.0,
    "thread_messages_per_hour": 3,
    "max_jobs_per_scan": 3,
    "max_wakes_per_hour": 6,
    "max_outgoing_per_run": 3,
    "coordinator": "self",
    "max_ticks": 3,
    "max_runtime_seconds": 600.0,
    "trace_grace_seconds": 120.0,
    "dedupe_days": 7.0,
    "retention_days": 30.0,
    "event_ttl_hours": 48.0,
    "escalation_repeat_hours": 72.0,
    "mentor_answer_hours": 24.0,
    "digest_items": 20,
    "context_bytes": 8192,
    "ignore_tags": ["sla", "reminder-auto", "digest"],
    "ignore_subjects": [],
    "status_only_phrases": ["ok", "okay", "ack", "received", "noted", "thanks", "thank you",
                            "working on it", "will do", "on it", "got it", "seen"],
    "max_note_age_days": 14.0,
    "flood_per_author_hour": 20,
    "person_grace_seconds": 120.0,
    "mentor": "",
    "rules_off": [],
}

# setting: (lowest, highest); the reason for each default is in protocols/reactor.md section 13
_RANGES: dict[str, tuple[float, float]] = {
    "scan_seconds": (0.01, 86400),
    "quiet_hours": (0.0001, 24 * 365),
    "stale_hours": (0.0001, 24 * 365),
    "dead_hours": (0.0001, 24 * 365),
    "unanswered_hours": (0.0001, 24 * 365),
    "stale_task_hours": (0.0001, 24 * 365),
    "consensus_wait_seconds": (0.01, 86400),
    "wake_cooldown_hours": (0, 24 * 30),
    "nudge_cooldown_hours": (0, 24 * 30),
    "thread_messages_per_hour": (1, 1000),
    "max_jobs_per_scan": (1, 1000),
    "max_wakes_per_hour": (1, 10000),
    "max_outgoing_per_run": (0, 100),
    "max_ticks": (1, 100),
    "max_runtime_seconds": (1, 86400),
    "trace_grace_seconds": (0, 86400),
    "dedupe_days": (0.0001, 3650),
    "retention_days": (0.0001, 3650),
    "event_ttl_hours": (0.0001, 24 * 365),
    "escalation_repeat_hours": (0.0001, 24 * 365),
    "mentor_answer_hours": (0, 24 * 30),
    "digest_items": (1, 200),
    "context_bytes": (1024, 1 << 20),
    "max_note_age_days": (0.0001, 3650),
    "flood_per_author_hour": (1, 100000),
    "person_grace_seconds": (0, 3600),
}
_INTS = {"thread_messages_per_hour", "max_jobs_per_scan", "max_wakes_per_hour", "max_outgoing_per_run",
         "max_ticks", "digest_items", "context_bytes", "flood_per_author_hour"}
_STR_LISTS = ("ignore_tags", "ignore_subjects", "status_only_phrases", "rules_off")
RULE_NAMES = frozenset({"direct_note", "offer", "task_due", "task_stale", "task_progress", "task_result",
                        "heartbeat_stale", "heartbeat_dead", "consensus", "person", "info", "ext"})
ROUTES = frozenset({"agent", "mentor", "operator", "coordinator"})
_AGENT_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")
_H = 3_600_000
EXTERNAL_TIMEOUT_S = 1800  # design 9.2: an external agent's run may take minutes of tool use


@dataclass(frozen=True)
class ReactorConfig:
    enabled: bool = True
    scan_seconds: float = 60.0
    quiet_hours: float = 6.0
    stale_hours: float = 24.0
    dead_hours: float = 72.0
    unanswered_hours: float = 24.0
    stale_task_hours: float = 24.0
    consensus_wait_seconds: float = 120.0
    wake_cooldown_hours: float = 6.0
    nudge_cooldown_hours: float = 24.0
    thread_messages_per_hour: int = 3
    max_jobs_per_scan: int = 3
    max_wakes_per_hour: int = 6
    max_outgoing_per_run: int = 3
    coordinator: str = "self"
    max_ticks: int = 3
    max_runtime_seconds: float = 600.0
    trace_grace_seconds: float = 120.0
    dedupe_days: float = 7.0
    retention_days: float = 30.0
    event_ttl_hours: float = 48.0
    escalation_repeat_hours: float = 72.0
    mentor_answer_hours: float = 24.0
    digest_items: int = 20
    context_bytes: int = 8192
    ignore_tags: tuple[str, ...] = tuple(DEFAULTS["ignore_tags"])
    ignore_subjects: tuple[str, ...] = ()
    status_only_phrases: tuple[str, ...] = tuple(DEFAULTS["status_only_phrases"])
    max_note_age_days: float = 14.0
    flood_per_author_hour: int = 20
    person_grace_seconds: float = 120.0  # the cycle's tick gets the person's messages first (adapters_notes)
    mentor: str = ""
    rules_off: tuple[str, ...] = ()
    mentors: Mapping[str, str] = field(default_factory=dict)
    routes: Mapping[str, str] = field(default_factory=dict)
    external: Mapping[str, Mapping] = field(default_factory=dict)
    adapters: Mapping[str, Mapping] = field(default_factory=dict)
    local_agents: frozenset[str] = frozenset()
    self_id: str = "self"

    # ---- the units the core computes with --------------------------------------------------
    @property
    def wake_cooldown_ms(self) -> int:
        return int(self.wake_cooldown_hours * _H)

    @property
    def nudge_cooldown_ms(self) -> int:
        return int(self.nudge_cooldown_hours * _H)

    @property
    def trace_grace_ms(self) -> int:
        return int(self.trace_grace_seconds * 1000)

    @property
    def event_ttl_ms(self) -> int:
        return int(self.event_ttl_hours * _H)

    @property
    def person_grace_ms(self) -> int:
        return int(self.person_grace_seconds * 1000)

    @property
    def dedupe_ms(self) -> int:
        return int(self.dedupe_days * 24 * _H)

    @property
    def escalation_repeat_ms(self) -> int:
        return int(self.escalation_repeat_hours * _H)

    @property
    def mentor_answer_ms(self) -> int:
        return int(self.mentor_answer_hours * _H)

    def mentor_of(self, agent: str) -> str | None:
        """The configured mentor of a canonical agent id (self's comes from ``mentor`` too)."""
        m = self.mentors.get(agent)
        if not m and agent == self.self_id and self.mentor:
            m = self.mentor
        return m or None

    def runtime_s(self, agent: str) -> int:
        """The run budget of a wake: an external agent's timeout_seconds (1800 by default), else max_runtime_seconds."""
        spec = self.external.get(agent)
        if spec is not None:
            return int(spec.get("timeout_seconds", EXTERNAL_TIMEOUT_S))
        return int(self.max_runtime_seconds)

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], *, self_id: str) -> "ReactorConfig":
        """Check a `[reactor]` table (defaults filled in for missing keys) and build the value."""
        known = {f.name for f in fields(cls)} - {"local_agents", "self_id"}
        for key in d:
            if key not in known:
                raise ValueError(f"reactor.{key} is not a reactor setting")
        v: dict[str, Any] = {}
        for key, default in DEFAULTS.items():
            v[key] = d.get(key, default)
        if not isinstance(v["enabled"], bool):
            raise ValueError("reactor.enabled must be true or false")
        for key, (lo, hi) in _RANGES.items():
            x = v[key]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or (key in _INTS and not isinstance(x, int)):
                raise ValueError(f"reactor.{key} must be a {'whole ' if key in _INTS else ''}number")
            if not lo <= x <= hi:
                raise ValueError(f"reactor.{key} must be between {lo:g} and {hi:g}")
            v[key] = int(x) if key in _INTS else float(x)
        if not v["quiet_hours"] < v["stale_hours"] < v["dead_hours"]:
            raise ValueError("reactor.quiet_hours, stale_hours and dead_hours must grow")
        if v["dedupe_days"] > v["retention_days"]:
            raise ValueError("reactor.dedupe_days must not exceed reactor.retention_days")
        for key in _STR_LISTS:
            x = v[key]
            if not isinstance(x, (list, tuple)) or not all(isinstance(s, str) for s in x) or len(x) > 1000:
                raise ValueError(f"reactor.{key} must be a list of strings")
            v[key] = tuple(x)
        for pat in v["ignore_subjects"]:
            try:
                re.compile(pat)
            except re.error as exc:
                raise ValueError(f"reactor.ignore_subjects has a bad regex {pat!r}: {exc}") from None
        for name in v["rules_off"]:
            if name not in RULE_NAMES:
                raise ValueError(f"reactor.rules_off names an unknown rule {name!r}")
        if not isinstance(v["mentor"], str):
            raise ValueError("reactor.mentor must be a string (a DID)")
        external = _table(d, "external")
        for name, spec in external.items():
            _check_external(name, spec)
        adapters = _table(d, "adapters")
        for name, spec in adapters.items():
            _check_adapter(name, spec)

        def canon(x: str) -> str:
            return self_id if x == "self" else x

        mentors_in = _table(d, "mentors", strings=True)
        mentors = {canon(a): canon(m) for a, m in mentors_in.items()}
        if v["mentor"] and self_id not in mentors:
            mentors[self_id] = v["mentor"]
        routes = _table(d, "routes", strings=True)
        for etype, route in routes.items():
            if route not in ROUTES and route != "self" and route not in external:
                raise ValueError(f"reactor.routes.{etype} must be agent, mentor, operator, coordinator, self"
                                 " or a name in [reactor.external]")
        routes = {etype: canon(route) for etype, route in routes.items()}
        coordinator = v["coordinator"]
        if not isinstance(coordinator, str) or not (coordinator == "self" or coordinator in external):
            raise ValueError("reactor.coordinator must be 'self' or a name in [reactor.external]")
        v["coordinator"] = canon(coordinator)
        return cls(**v, mentors=mentors, routes=routes, external=external, adapters=adapters,
                   local_agents=frozenset({self_id, *external}), self_id=self_id)


# The keys each sub-table may hold: what reactor/external.py (wake_external) and reactor/plugins.py
# (run_plugin, parse_lines) read. Anything else is a typo, refused at load.
EXTERNAL_KEYS = frozenset({"command", "timeout_seconds", "network", "memory_mb", "workspace"})
ADAPTER_KEYS = frozenset({"command", "entry_point", "every_seconds", "max_severity", "timeout_seconds", "network",
                          "workspace", "agent"})
_ENTRY_POINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _number(where: str, x: Any, lo: float, hi: float, *, whole: bool = False) -> None:
    if isinstance(x, bool) or not isinstance(x, int if whole else (int, float)) or not lo <= x <= hi:
        raise ValueError(f"{where} must be {'an integer' if whole else 'a number'} from {lo:g} to {hi:g}")


def _command(where: str, cmd: Any) -> None:
    if not isinstance(cmd, (list, tuple)) or not cmd or not all(isinstance(c, str) and c for c in cmd):
        raise ValueError(f"{where}.command must be a non-empty list of strings")


def _check_external(name: str, spec: Mapping[str, Any]) -> None:
    """``[reactor.external.NAME]`` (design 9.2): command, timeout_seconds, network, memory_mb, workspace."""
    where = f"reactor.external.{name}"
    if not _AGENT_NAME.match(name) or name == "self":
        raise ValueError(f"{where} must be named [a-z0-9_-]{{1,32}} (not 'self')")
    for key in spec:
        if key not in EXTERNAL_KEYS:
            raise ValueError(f"{where}.{key} is not a setting of an external agent ({', '.join(sorted(EXTERNAL_KEYS))})")
    _command(where, spec.get("command"))
    _number(f"{where}.timeout_seconds", spec.get("timeout_seconds", EXTERNAL_TIMEOUT_S), 1, 86400)
    if not isinstance(spec.get("network", True), bool):
        raise ValueError(f"{where}.network must be true or false")
    _number(f"{where}.memory_mb", spec.get("memory_mb", 2048), 64, 65536, whole=True)
    if spec.get("workspace", "job") not in ("job", "home"):
        raise ValueError(f'{where}.workspace must be "job" or "home"')


def _check_adapter(name: str, spec: Mapping[str, Any]) -> None:
    """``[reactor.adapters.NAME]`` (design 4.1): one of command / entry_point, every_seconds,
    max_severity, timeout_seconds, network, workspace (an absolute folder), agent (the default addressee)."""
    where = f"reactor.adapters.{name}"
    if not re.match(r"^[a-z0-9_]{1,32}$", name):
        raise ValueError(f"{where} must be named [a-z0-9_]{{1,32}}")
    for key in spec:
        if key not in ADAPTER_KEYS:
            raise ValueError(f"{where}.{key} is not a setting of a plug-in adapter ({', '.join(sorted(ADAPTER_KEYS))})")
    if ("command" in spec) == ("entry_point" in spec):
        raise ValueError(f"{where} needs exactly one of command or entry_point")
    if "command" in spec:
        _command(where, spec["command"])
    elif not isinstance(spec["entry_point"], str) or not _ENTRY_POINT.match(spec["entry_point"]):
        raise ValueError(f'{where}.entry_point must be "module:callable"')
    _number(f"{where}.every_seconds", spec.get("every_seconds", 900), 1, 7 * 86400)
    if spec.get("max_severity", "P2") not in ("P1", "P2", "P3", "P4"):
        raise ValueError(f"{where}.max_severity must be P1..P4")
    _number(f"{where}.timeout_seconds", spec.get("timeout_seconds", 20), 1, 3600)
    if not isinstance(spec.get("network", False), bool):
        raise ValueError(f"{where}.network must be true or false")
    ws = spec.get("workspace", "")
    if not isinstance(ws, str) or (ws and not ws.startswith("/")):
        raise ValueError(f"{where}.workspace must be an absolute folder path")
    agent = spec.get("agent", "self")
    if not isinstance(agent, str) or not 0 < len(agent) <= 200:
        raise ValueError(f"{where}.agent must be an agent name, alias or DID (1..200 characters)")


def _table(d: Mapping[str, Any], key: str, *, strings: bool = False) -> dict:
    t = d.get(key, {})
    if not isinstance(t, Mapping):
        raise ValueError(f"reactor.{key} must be a table")
    for k, val in t.items():
        if strings and not isinstance(val, str):
            raise ValueError(f"reactor.{key}.{k} must be a string")
        if not strings and not isinstance(val, Mapping):
            raise ValueError(f"reactor.{key}.{k} must be a table")
    return {str(k): (val if strings else dict(val)) for k, val in t.items()}


TABLES = ("mentors", "routes", "external", "adapters")  # [reactor.mentors] etc.: tables, not scalars
SECTION_DEFAULTS: dict[str, Any] = {**DEFAULTS, **{table: {} for table in TABLES}}
NOTE = ("the reactor: scans the node's signals every scan_seconds and wakes an agent only when something"
        " needs it, with cooldowns and budgets; escalates to a mentor, then to you, when a wake leaves no"
        " trace (protocols/reactor.md). Sub-tables: [reactor.mentors] agent = mentor, [reactor.routes]"
        " event type = route, [reactor.external.NAME] command = [...], [reactor.adapters.NAME] command = [...]")
# a well-formed DID standing in for this node's at load (the key is not read then); the driver uses the real one
_LOAD_SELF_ID = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def check_reactor(reactor: Mapping[str, Any], self_id: str = _LOAD_SELF_ID) -> ReactorConfig:
    """``[reactor]`` as the reactor's settings; every range and sub-table checked (one line naming the setting)."""
    try:
        return ReactorConfig.from_mapping(reactor, self_id=self_id)
    except ValueError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "reactor: invalid settings"
        raise ConfigError("bad_config", reason if reason.startswith("reactor") else f"reactor: {reason}") from None
