"""The reactor over HTTP (protocols/web.md 4.1): its status, events, jobs, decisions, rules and
aliases, a scan, a lease dropped by hand, and the cooldowns (listed; lifted by the person): the app's reactor actions, as ``meshnode reactor ...``
calls them (what the reactor stored is read on or off; the status adds what the running reactor
knows, the scan is the node's own). The rules and aliases are the configuration's."""

from __future__ import annotations

import trio

from meshnode.engines.reactor import rules
from meshnode.records.reactor.statuses import JOB_STATUSES
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

_LIMIT = ids.LIMIT
_KEY = Arg(str, required=True, max=512)


async def status(services, args):
    """``meshnode reactor status``: the running reactor's view (the stored state with its next
    scan, runs in progress, adapters) when it is on, else the stored state."""
    if services.reactor is not None:
        return await services.call("reactor_status")
    return {**await services.call("reactor_stored"), "enabled": False, "node": "running"}


async def events(services, args):
    return await services.call("reactor_events", agent=args["agent"], type=args["type"], since_ms=args["since_ms"],
                               all=args["all"], limit=args["limit"])


async def jobs(services, args):
    return await services.call("reactor_jobs", status=args["status"], limit=args["limit"])


async def job(services, args):
    return await services.call("reactor_job", id=args["id"])


async def explain(services, args):
    return await services.call("reactor_explain", key=args["key"])


async def rules_(services, args):
    return rules.describe(services.config)


async def aliases(services, args):
    if args["unknown"]:
        return await services.call("reactor_unknown")
    return await trio.to_thread.run_sync(rules.aliases, services.config.home, services.key.did)


async def scan(services, args):
    return await services.call("reactor_scan", dry_run=args["dry_run"])


async def release(services, args):
    return await services.call("reactor_release", job=args["id"])


async def timeline(services, args):
    """The wakes in words (``records.reactor.timeline``): what woke whom, why, what the agent did,
    what was escalated, and the signals that woke nobody; read on or off."""
    return await services.call("reactor_timeline", limit=args["limit"], before_ms=args["before_ms"])


async def cooldowns(services, args):
    return await services.call("reactor_cooldowns")


async def cooldown_clear(services, args):
    return await services.call("reactor_cooldown_clear", key=args["key"], all=args["all"])


ROUTES: list[Endpoint] = [
    Endpoint("GET", "/api/reactor", status, {}, "enabled, last and next scan, pending events, open jobs, leases,"
             " cooldowns, wakes, unknown addressees"),
    Endpoint("GET", "/api/reactor/timeline", timeline,
             {"limit": Arg(int, min=1, max=100, default=20, doc="at most this many wakes and signals"),
              "before_ms": Arg(int, min=0, doc="the page before this time (the last item's at_ms)")},
             "the reactor's wakes in words, newest first: [{kind: wake, sentence, who, why, signals, did,"
             " escalations, job_id, at_ms} | {kind: signal, sentence, text, outcome, key, at_ms}]"),
    Endpoint("GET", "/api/reactor/events", events,
             {"agent": Arg(str, max=512, doc="only this agent's (canonical id)"),
              "type": Arg(str, max=128, doc="only this event type (note.direct, task.offer, ...)"),
              "since_ms": Arg(int, min=0, doc="only those seen since (ms since 1970)"),
              "all": Arg(bool, default=False, doc="noise and unknown addressees too"), "limit": _LIMIT},
             "events newest first, with their last decision"),
    Endpoint("GET", "/api/reactor/jobs", jobs,
             {"status": Arg(str, choices=tuple(JOB_STATUSES)), "limit": _LIMIT}, "wake jobs newest first"),
    Endpoint("GET", "/api/reactor/jobs/{id}", job, {"id": _KEY},
             "one job: context, report, events, decisions, escalations, lease"),
    Endpoint("GET", "/api/reactor/explain/{key}", explain, {"key": _KEY},
             "every decision on an event (dedupe key or note DID) or a job, in order"),
    Endpoint("GET", "/api/reactor/rules", rules_, {}, "the built-in rules with this node's changes"),
    Endpoint("GET", "/api/reactor/aliases", aliases,
             {"unknown": Arg(bool, default=False, doc="addressees nobody is known as, with counts")},
             "the alias registry (reactor/aliases.toml)"),
    Endpoint("POST", "/api/reactor/scan", scan, {"dry_run": Arg(bool, default=False, doc="decide, write nothing")},
             "one scan now, by the running node (409 reactor_off when it is off)"),
    Endpoint("POST", "/api/reactor/jobs/{id}/release", release, {"id": _KEY},
             "drop a job's lease by hand (404 when none is held)"),
    Endpoint("GET", "/api/reactor/cooldowns", cooldowns, {},
             "the cooldowns in force (wake per agent and signal kind, nudge, message), the soonest to end first"),
    Endpoint("POST", "/api/reactor/cooldowns/clear", cooldown_clear,
             {"key": Arg(str, max=1000, doc="the cooldown's key, as listed"),
              "all": Arg(bool, default=False, doc="every cooldown in force")},
             "lift one cooldown or all (400 without exactly one of key and all; 404 when the key is in force"
             " nowhere)"),
]
