"""The choices and defaults the parsers offer whose home is a module too heavy to load for
building the parser (``meshnode --version`` builds all of it). Each is written here as its
home has it; ``tests/test_cli_startup.py`` checks every one against ``HOMES``."""

from __future__ import annotations

AUDIENCES = ("private", "friends", "public")
NOTE_SOURCES = ("user", "cli", "llm", "llm:task", "system")
AUTOSTARTS = ("systemd-user", "systemd-system", "script", "none")
SPAWN_KINDS = ("clone", "trained", "newborn")
GOAL_STATUSES = ("proposed", "active", "paused", "completed", "cancelled", "failed")
TASK_STATUSES = ("pending", "in_progress", "paused", "completed", "failed", "abandoned")
DELEGATION_RULES = ("creator", "cogconsensus", "meshconsensus")
JOB_STATUSES = ("queued", "leased", "running", "checking", "ok", "failed", "interrupted", "skipped")
SEARCH_KINDS = ("notes", "diary", "concepts")
HELD_LIMIT = 100
VOTE_DECISIONS = ("general", "ethical")
VOTE_HALF_LIFE_DAYS = 30.0
VOTE_MIN_VOTERS = 3
VOTE_MIN_TRUST = 1.0
LOG_LEVELS = ("debug", "info", "warning", "error")

# name here -> (module, expression there) that it must equal
HOMES = {
    "LOG_LEVELS": ("meshnode.base.config.node", "LOG_LEVELS"),
    "AUDIENCES": ("meshnode.domain.notes", "AUDIENCES"),
    "NOTE_SOURCES": ("meshnode.domain.notes", "SOURCES"),
    "AUTOSTARTS": ("meshnode.engines.spawn.model", "AUTOSTARTS"),
    "SPAWN_KINDS": ("meshnode.engines.spawn.model", "KINDS"),
    "GOAL_STATUSES": ("meshnode.records.gmp.reads", "GOAL_STATUSES"),
    "TASK_STATUSES": ("meshnode.records.gmp.reads", "TASK_STATUSES"),
    "DELEGATION_RULES": ("meshnode.records.gmp.service", "RULES"),
    "JOB_STATUSES": ("meshnode.records.reactor.statuses", "JOB_STATUSES"),
    "SEARCH_KINDS": ("meshnode.records.knowledge", "SEARCH_KINDS"),
    "HELD_LIMIT": ("meshnode.records.mind.held", "DEFAULT_LIMIT"),
    "VOTE_DECISIONS": ("meshnode.domain.consensus.cogvote", "tuple(DECISIONS)"),
    "VOTE_HALF_LIFE_DAYS": ("meshnode.domain.consensus.cogvote", "DEFAULT_HALF_LIFE_MS / DAY_MS"),
    "VOTE_MIN_VOTERS": ("meshnode.domain.consensus.cogvote", "DEFAULT_MIN_VOTERS"),
    "VOTE_MIN_TRUST": ("meshnode.domain.consensus.cogvote", "DEFAULT_MIN_TRUST"),
}
