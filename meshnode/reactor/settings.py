"""The `[reactor]` settings as one frozen value, checked once at load (protocols/reactor.md 13).

``DEFAULTS`` holds the plain keys (scalars and lists) that config.py merges into its own defaults;
the sub-tables (mentors, routes, external, adapters) default to empty. ``ReactorConfig.from_mapping``
checks every type and range and raises ``ValueError("reactor.<key> must ...")`` naming the
setting; config.py turns it into a ConfigError. Times keep the design's units (hours, seconds) as
floats so tests and the simulator can use seconds-scale windows; the ``*_ms`` properties are what
the core computes with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

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
}
_INTS = {"thread_messages_per_hour", "max_jobs_per_scan", "max_wakes_per_hour", "max_outgoing_per_run",
         "max_ticks", "digest_items", "context_bytes", "flood_per_author_hour"}
_STR_LISTS = ("ignore_tags", "ignore_subjects", "status_only_phrases", "rules_off")
RULE_NAMES = frozenset({"direct_note", "offer", "task_due", "task_stale", "heartbeat_stale",
                        "heartbeat_dead", "consensus", "person", "info", "ext"})
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
            if not _AGENT_NAME.match(name) or name == "self":
                raise ValueError(f"reactor.external.{name} must be named [a-z0-9_-]{{1,32}} (not 'self')")
            cmd = spec.get("command")
            if not isinstance(cmd, (list, tuple)) or not cmd or not all(isinstance(c, str) and c for c in cmd):
                raise ValueError(f"reactor.external.{name}.command must be a non-empty list of strings")
            t = spec.get("timeout_seconds", EXTERNAL_TIMEOUT_S)
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not 1 <= t <= 86400:
                raise ValueError(f"reactor.external.{name}.timeout_seconds must be between 1 and 86400")
        adapters = _table(d, "adapters")
        for name, spec in adapters.items():
            if not re.match(r"^[a-z0-9_]{1,32}$", name):
                raise ValueError(f"reactor.adapters.{name} must be named [a-z0-9_]{{1,32}}")
            if ("command" in spec) == ("entry_point" in spec):
                raise ValueError(f"reactor.adapters.{name} needs exactly one of command or entry_point")
            every = spec.get("every_seconds", 900)
            if isinstance(every, bool) or not isinstance(every, (int, float)) or not 1 <= every <= 7 * 86400:
                raise ValueError(f"reactor.adapters.{name}.every_seconds must be between 1 and 604800")
            if spec.get("max_severity", "P2") not in ("P1", "P2", "P3", "P4"):
                raise ValueError(f"reactor.adapters.{name}.max_severity must be P1..P4")

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
