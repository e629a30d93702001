"""CLI commands for the reactor (protocols/reactor.md section 14): ``meshnode reactor status|scan|
events|jobs|explain|rules|aliases|release|cooldowns|cooldown clear``.

The reading commands and ``release`` are the app's reactor actions (``act``: by the running node,
or on the home's database when none runs: the reactor's rows are all there); ``status`` adds what
the running node knows (next scan, runs in progress).
``scan --once`` runs one scan in this process (12.2): it can wake external agents and waits for
them; a job for this node's own core is written and the running node is poked to take it.
"""

from __future__ import annotations

import json
import re

import trio

from meshnode.faces.cli.common import _ask_node, _config, act, load_names, named_text, print_json, print_rows, terminal_safe, who
from meshnode.base.container import format_ms, now_ms
from meshnode.base.errors import MeshnodeError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SINCE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])")


class ReactorCliError(MeshnodeError):
    """A value on the command line that is not what the option takes."""


def since_ms(text: str, now: int) -> int:
    m = _SINCE.fullmatch(str(text).strip().lower())
    if not m:
        raise ReactorCliError("bad_duration", f"--since {text!r} is not a duration (e.g. 90s, 15m, 2h, 1d, 1w)")
    back_ms = float(m.group(1)) * _UNITS[m.group(2)] * 1000
    return max(0, now - int(back_ms)) if back_ms < now else 0  # longer than the epoch: everything


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= 10000:
        raise ReactorCliError("bad_limit", "--limit must be between 1 and 10000")


def _when(ms) -> str:
    return format_ms(int(ms))[:19].replace("T", " ") if ms else "-"


# --- commands ------------------------------------------------------------------------------


def cmd_status(args) -> int:
    config = _config(args)
    values = config.values["reactor"]
    stored = act(config, "reactor_stored", {})
    live = _ask_node(config, "reactor_status", required=False, timeout=20) if values["enabled"] else None
    out = {**stored, **(live or {})}
    out["enabled"] = bool(values["enabled"])
    out["node"] = "running" if live is not None else "not running" if values["enabled"] else "-"
    me = None  # the key is opened (perhaps asking for its passphrase) only when needed, and once
    if live is None and values["enabled"]:
        me = config_did(config)
        waiting = [j["job_id"] for j in act(config, "reactor_jobs", {"status": "queued"}) if j.get("agent") == me]
        out["core"] = "not running (its jobs wait for `meshnode run`)"
        out["waiting_for_node"] = waiting
    if args.json:
        print_json(out)
        return 0
    load_names(config)
    for line in status_lines(out, me or config_did(config)):
        print(terminal_safe(line))
    return 0


def config_did(config) -> str:
    from meshnode.store.home import open_identity

    return open_identity(config).did


def _who(agent: str | None, me: str) -> str:
    """An agent as a listing shows it: ``self`` for this node, a DID by what it is called here
    (common.who: petname, announced name, short id; the DID with ``--did``), else its name."""
    if not agent:
        return "-"
    return "self" if agent == me else who(agent) if agent.startswith("did:") else agent


def status_lines(st: dict, me: str) -> list[str]:
    """``reactor status`` for a person: one line per fact, one per open job, lease and cooldown."""
    last = st.get("last_scan") or {}
    on = f"on; node {st.get('node')}" + (f"; core {st['core']}" if st.get("core") else "")
    out = [f"reactor:    {on if st.get('enabled') else 'off ([reactor] enabled = false): nothing is scanned'}",
           f"last scan:  {_when(last.get('at_ms'))} ({last.get('took_ms', '?')} ms, {last.get('events', 0)} event(s))"
           if last else "last scan:  never",
           f"next scan:  {_when(st.get('next_scan_ms'))}" if st.get("next_scan_ms") else None,
           f"pending:    " + (", ".join(f"{_who(a, me)} {n}" for a, n in (st.get("pending") or {}).items()) or "none"),
           f"wakes:      {st.get('wakes_last_hour_total', 0)} in the last hour"]
    for j in st.get("open_jobs") or []:
        out.append(f"job:        {j.get('job_id')}  {j.get('status')}  {_who(j.get('agent'), me)}  P{j.get('priority')}"
                   f"  {', '.join(j.get('reason') or [])}")
    for job_id in st.get("waiting_for_node") or []:
        out.append(f"waiting:    {job_id} waits for `meshnode run` (this node's core is woken by the node)")
    for lease in st.get("leases") or []:
        out.append(f"lease:      {_who(lease.get('agent'), me)}  {lease.get('job_id')}  until"
                   f" {_when(lease.get('expires_ms'))}  by {lease.get('holder')}")
    for c in st.get("cooldowns") or []:
        out.append(f"cooldown:   {c.get('key')}  until {_when(c.get('until_ms'))}")
    if st.get("unsent_escalations"):
        out.append(f"unsent:     {st['unsent_escalations']} escalation(s) not sent yet")
    for u in st.get("unknown") or []:
        out.append(f"unknown:    {_compact(u)}")
    for name, run in (st.get("adapters") or {}).items():
        error = f"  first error: {run['first_error']}" if run.get("first_error") else ""
        out.append(f"adapter:    {name}  last run {_when(run.get('at_ms'))}  {run.get('exit')}"
                   f"  {run.get('valid')} valid, {run.get('invalid')} invalid{error}")
    for error in st.get("adapter_errors") or []:
        out.append(f"adapter:    {error}")
    if st.get("running_jobs"):
        out.append(f"running:    {', '.join(st['running_jobs'])}")
    by_status = st.get("events_by_status") or {}
    out.append("events:     " + (", ".join(f"{k} {v}" for k, v in by_status.items()) or "none"))
    return [line for line in out if line]


def _compact(v) -> str:
    if isinstance(v, dict):
        return " ".join(f"{k}={x}" for k, x in v.items() if x not in (None, "", [], {}))
    return str(v)


def cmd_scan(args) -> int:
    config = _config(args)
    if not config.values["reactor"]["enabled"]:
        raise ReactorCliError("reactor_off", "the reactor is off ([reactor] enabled = false)")
    # a running node scans itself (it can wake its own core, and its state stays its own); without
    # one, --once scans in this process
    summary = _ask_node(config, "reactor_scan", {"dry_run": bool(args.dry_run)}, required=False, timeout=120)
    if summary is not None:
        summary["scanned_by"] = "the running node"
    elif args.once:
        summary = _run_scan_once(config, args.dry_run)
        summary["scanned_by"] = "this process"
    else:
        raise ReactorCliError("node_not_running", "no node is running here; `meshnode reactor scan --once`"
                              " scans in this process")
    if args.json:
        print_json(summary)
        return 0
    _print_scan(summary)
    return 0


def _run_scan_once(config, dry_run: bool) -> dict:
    """``_scan_once``; an expected failure (the database, the alias file) raised inside its nursery
    is one line, not a traceback."""
    from meshnode.faces.cli.common import _only
    from meshnode.engines.reactor.aliases import AliasError

    try:
        return trio.run(_scan_once, config, dry_run)
    except (BaseExceptionGroup, AliasError) as exc:
        leaf = _only(exc, (MeshnodeError, AliasError)) if isinstance(exc, BaseExceptionGroup) else exc
        if leaf is None:
            raise
        raise ReactorCliError(getattr(leaf, "code", "bad_aliases"), leaf.reason) from None


async def _scan_once(config, dry_run: bool) -> dict:
    from meshnode.store.home import open_identity
    from meshnode.base.metrics import Metrics
    from meshnode.engines.reactor.service import ReactorService, reactor_config
    from meshnode.store import Store

    key = open_identity(config)
    cfg = reactor_config(config.values["reactor"], key.did)

    async def relay(did: str, container: str):  # an escalation note, pushed by the running node
        return await trio.to_thread.run_sync(lambda: _ask_node(config, "send", {"did": did, "container": container},
                                                               timeout=60))

    async with await Store.open(config.db_path, create=False) as store:
        service = ReactorService(store, key, cfg, config.home, Metrics(), relay=relay,
                                 committee=list(config.values["consensus"]["committee"]))
        summary = await service.scan_once(dry_run=dry_run)
    return summary


def _print_scan(summary: dict) -> None:
    for d in summary.get("decisions", []):
        why = f" ({d['why']})" if d.get("why") else ""
        job = f" -> {d['job_id']}" if d.get("job_id") else ""
        print(terminal_safe(f"{d['action']:<18} {d['dedupe_key']}{job}{why}"))
    started = summary.get("started", [])
    for job_id in summary.get("waiting_for_node", []):
        print(f"{job_id} waits for `meshnode run`: this node's core is woken by the running node")
    print(f"{summary.get('events', 0)} event(s), {len(summary.get('jobs', []))} job(s), {len(started)} started,"
          f" {len(summary.get('escalations', []))} escalation(s)" + (" (dry run: nothing written)"
                                                                      if summary.get("dry_run") else ""))


def cmd_events(args) -> int:
    config = _config(args)
    _check_limit(args.limit)
    since = since_ms(args.since, now_ms()) if args.since else None
    rows = act(config, "reactor_events", {"agent": args.agent, "type": args.type, "since_ms": since,
                                          "all": args.all, "limit": args.limit})
    me = config_did(config)
    if rows and not args.json:
        load_names(config)
    print_rows(args, rows, lambda r: f"{_when(r.get('seen_ms'))}  {r.get('event_type', '?'):<18}"
                                     f" {r.get('status') or '-':<8} {_who(r.get('agent'), me):<14}"
                                     f" {r.get('dedupe_key')}  {named_text(r.get('summary') or '')}")
    return 0


def cmd_jobs(args) -> int:
    config = _config(args)
    if args.show:
        if len(args.show) != 2 or args.show[0] != "show":
            raise ReactorCliError("bad_usage", "usage: meshnode reactor jobs [--status S] | jobs show JOB")
        job = act(config, "reactor_job", {"id": args.show[1]})  # no_job for an unknown id
        if args.json:
            print_json(job)
            return 0
        load_names(config)
        for line in job_lines(job, config_did(config)):
            print(terminal_safe(line, keep_newlines=True))
        return 0
    _check_limit(args.limit)
    rows = act(config, "reactor_jobs", {"status": args.status, "limit": args.limit})
    me = config_did(config)
    if rows and not args.json:
        load_names(config)
    print_rows(args, rows, lambda r: f"{_when(r.get('created_ms'))}  {r.get('status', '?'):<11}"
                                     f" P{r.get('priority', '?')} {_who(r.get('agent'), me):<14} {r.get('job_id')}"
                                     f"  {', '.join(r.get('reason') or [])}")
    return 0


def job_lines(job: dict, me: str) -> list[str]:
    """``jobs show``: the job, its events and decisions, then the wake context as the agent read it."""
    from meshnode.engines.reactor.wake_context import render_md

    out = [f"job:       {job['job_id']}  {job.get('status')}  {_who(job.get('agent'), me)}  P{job.get('priority')}",
           f"reason:    {', '.join(job.get('reason') or [])}",
           f"created:   {_when(job.get('created_ms'))}  started {_when(job.get('started_ms'))}"
           f"  ended {_when(job.get('ended_ms'))}  exit {job.get('exit') or '-'}",
           f"required:  {', '.join(job.get('required_trace') or [])}",
           f"missing:   {', '.join(job.get('missing') or []) or '-'}"]
    if job.get("report"):
        out.append(f"report:    {json.dumps(job['report'], ensure_ascii=False)}")
    for e in job.get("event_rows") or []:
        out.append(f"event:     {e.get('event_type')}  {e.get('status')}  {e.get('dedupe_key')}")
    for d in job.get("decisions") or []:
        out.append(f"decision:  {_when(d.get('at_ms'))}  {d.get('action')}  {d.get('dedupe_key')}"
                   f"  {d.get('why') or ''}")
    for e in job.get("escalations") or []:
        out.append(f"escalated: level {e.get('level')} to {_who(e.get('to_id'), me)}  {e.get('key')}")
    if job.get("context"):
        out += ["", render_md(job["context"], 1 << 20)]
    return out


def cmd_explain(args) -> int:
    config = _config(args)
    found = act(config, "reactor_explain", {"key": args.key})  # not_found when nothing is known of it
    if args.json:
        print_json(found)
        return 0
    for d in found.get("decisions", []):
        rule = f" [{d['rule']}]" if d.get("rule") else ""
        job = f" job {d['job_id']}" if d.get("job_id") else ""
        print(terminal_safe(f"{_when(d.get('at_ms'))}  {d.get('action')}{rule}{job}  {d.get('why') or ''}"))
    for e in found.get("escalations", []) or []:
        print(terminal_safe(f"{_when(e.get('sent_ms'))}  escalation level {e.get('level')} to {e.get('to_id')}"
                            f"  {e.get('key')}"))
    return 0


def cmd_rules(args) -> int:
    from meshnode.engines.reactor.rules import describe

    rows = describe(_config(args))
    print_rows(args, rows, lambda r: f"{r['rule']:<16} {'off' if r['off'] else 'on':<4}"
                                     f" {r['route']:<9} {'wakes' if r['wakes'] else 'digest only':<12}"
                                     f"{' nudge' if r['nudge'] else '      '}  {', '.join(r['events'])}"
                                     + "".join(f"  ({t} -> {to})" for t, to in r['rerouted'].items()))
    return 0


def cmd_aliases(args) -> int:
    config = _config(args)
    if args.unknown:
        rows = act(config, "reactor_unknown", {})
        print_rows(args, rows, lambda r: f"{r['name']}  named by {r['events']} event(s), last"
                                         f" {_when(r['last_seen_ms'])} ({r['event_type']})")
        return 0
    from meshnode.engines.reactor.rules import aliases

    rows = aliases(config.home, config_did(config))
    print_rows(args, rows, lambda r: f"{r['agent']}{' (self)' if r['self'] else ''}:"
                                     f" {', '.join(r['aliases']) or '(no aliases)'}")
    return 0


def cmd_release(args) -> int:
    released = act(_config(args), "reactor_release", {"job": args.job})  # not_found when none is held
    if args.json:
        print_json(released)
    else:
        print(f"released the lease of {args.job}")
    return 0


def cmd_cooldowns(args) -> int:
    config = _config(args)
    rows = act(config, "reactor_cooldowns", {})
    me = config_did(config) if rows and not args.json else ""
    if me:
        load_names(config)
    print_rows(args, rows, lambda r: f"{r.get('limit', '?'):<8} {_who(r.get('agent'), me):<14} {r.get('kind'):<14}"
                                     f" until {_when(r.get('until_ms'))}  ({r.get('count')})  {r.get('key')}")
    return 0


def cmd_cooldown_clear(args) -> int:
    if bool(args.key) == bool(args.all):
        raise ReactorCliError("bad_usage", "usage: meshnode reactor cooldown clear KEY | --all")
    # a wake key may name this node as "self": the core keeps its DID
    key = args.key
    if key and key.startswith("wake:self:"):
        key = f"wake:{config_did(_config(args))}:{key[len('wake:self:'):]}"
    out = act(_config(args), "reactor_cooldown_clear", {"key": key, "all": bool(args.all)})
    if args.json:
        print_json(out)
    elif out["lifted"]:
        for k in out["lifted"]:
            print(terminal_safe(f"lifted {k}"))
    else:
        print("no cooldown is in force")
    return 0
