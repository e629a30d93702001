"""The parsers of the commands in ``meshnode.faces.cli.reactor`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import JOB_STATUSES

commands = Commands("meshnode.faces.cli.reactor")


def _json_flag(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_parsers(sub, common) -> None:
    r = sub.add_parser("reactor", parents=[common], help="the reactor: signals, wake jobs, traces, escalations")
    r = r.add_subparsers(dest="reactor_command", required=True, metavar="SUBCOMMAND")
    p = r.add_parser("status", parents=[common], help="enabled, last and next scan, pending events, open jobs,"
                     " leases, cooldowns, budgets, unknown addressees")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_status)
    p = r.add_parser("scan", parents=[common], help="one scan now: in this process with --once, else in the node",
                     epilog="example (a systemd timer runs it this way): meshnode reactor scan --once")
    p.add_argument("--once", action="store_true", help="scan in this process (no running node needed)")
    p.add_argument("--dry-run", action="store_true", help="print the decisions, write and wake nothing")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_scan)
    p = r.add_parser("events", parents=[common], help="events with their last decision")
    p.add_argument("--agent", help="only this agent's (canonical id)")
    p.add_argument("--type", help="only this event type (note.direct, task.offer, ...)")
    p.add_argument("--since", metavar="D", help="only those seen in the last D (90s, 15m, 2h, 1d, 1w)")
    p.add_argument("--all", action="store_true", help="noise and duplicates too")
    p.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_events)
    p = r.add_parser("jobs", parents=[common], help="wake jobs; `jobs show JOB`: one with its context, report,"
                     " traces and missing set")
    p.add_argument("show", nargs="*", metavar="show JOB", help="show one job")
    p.add_argument("--status", choices=JOB_STATUSES, help="only jobs in this status")
    p.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_jobs)
    p = r.add_parser("explain", parents=[common], help="every decision on an event or job, in order")
    p.add_argument("key", metavar="KEY|ID", help="an event's dedupe key, a job id or an escalation key")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_explain)
    p = r.add_parser("rules", parents=[common], help="the built-in rules with this node's changes")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_rules)
    p = r.add_parser("aliases", parents=[common], help="the alias registry (reactor/aliases.toml); --unknown:"
                     " addressees nobody is known as")
    p.add_argument("--unknown", action="store_true", help="unknown addressees, with counts and last sighting")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_aliases)
    p = r.add_parser("release", parents=[common], help="drop a job's lease by hand (its agent can be woken again)")
    p.add_argument("job", metavar="JOB", help="the job id")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_release)
    p = r.add_parser("cooldowns", parents=[common], help="the cooldowns in force: wake (per agent and signal"
                     " kind), nudge, message")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_cooldowns)
    p = r.add_parser("cooldown", parents=[common], help="`cooldown clear KEY|--all`: lift cooldowns by hand")
    c = p.add_subparsers(dest="cooldown_command", required=True, metavar="SUBCOMMAND")
    p = c.add_parser("clear", parents=[common], help="lift one cooldown (a key `reactor cooldowns` lists) or all",
                     epilog="example: meshnode reactor cooldown clear wake:self:offer")
    p.add_argument("key", nargs="?", metavar="KEY", help="the cooldown's key (wake:<agent>:<kind>, nudge:..., msg:...)")
    p.add_argument("--all", action="store_true", help="every cooldown in force")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_cooldown_clear)
