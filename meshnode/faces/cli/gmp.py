"""CLI commands for GMP (protocols/gmp.md section 10): ``goal add|list|show|update|cancel`` and
``task add|list|show|update|assign|nominate|accept|refuse|progress|done|review|due|release``.

Each is the application's action of that name (``meshnode.app.actions.gmp``), run by the running
node when there is one (it then pushes offers, answers and new versions at once) and on the
home's database in this process otherwise (``cli.common.act``): the same function either way.
"""

from __future__ import annotations

import calendar
import re
import time

from meshnode.faces.cli.common import _ask_node, _config, act, agent_did, print_json, print_rows, terminal_safe, who
from meshnode.base.container import format_ms, now_ms, parse_ms
from meshnode.base.errors import MeshnodeError
from meshnode.store.home import open_identity
from meshnode.store.short_ids import short_container_id

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\+?\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)")
_ICONS = {"completed": "✓", "in_progress": "▶", "pending": "○", "paused": "‖", "failed": "✗", "abandoned": "–"}


class GmpCliError(MeshnodeError):
    """A value on the command line that is not what the option takes."""


def seconds(text: str, flag: str) -> int:
    """``90``, ``90s``, ``15m``, ``2h``, ``1d``, ``1w`` as seconds."""
    m = _DURATION.fullmatch(str(text).strip().lower())
    if not m:
        raise GmpCliError("bad_duration", f"{flag} {text!r} is not a duration (e.g. 90s, 15m, 2h, 1d, 1w)")
    return int(float(m.group(1)) * _UNITS[m.group(2) or "s"])


def when_ms(text: str, flag: str, now: int) -> int:
    """A time: RFC 3339 (``2026-12-02T10:00:00.000Z``), a UTC date or date and time
    (``2026-12-02``, ``2026-12-02 10:00``), or a duration from now (``3d``, ``+2h``)."""
    raw = str(text).strip()
    if _DURATION.fullmatch(raw.lower()) and not re.fullmatch(r"[0-9]{4}", raw):
        return now + seconds(raw, flag) * 1000
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return calendar.timegm(time.strptime(raw.removesuffix("Z"), fmt)) * 1000
        except ValueError:
            continue
    try:
        return parse_ms(raw, flag)
    except MeshnodeError:
        raise GmpCliError("bad_time", f"{flag} {text!r} is not a time (2026-12-02, 2026-12-02 10:00, or 3d from"
                                      " now)") from None


def _clock(ms: int | None) -> str:
    return format_ms(ms)[:16].replace("T", " ") if ms else "-"


# --- running a command ---------------------------------------------------------------------------


def _act(args, cmd: str, kwargs: dict):
    """Action ``cmd`` for the person at the CLI, by the running node or here."""
    return act(_config(args), cmd, kwargs)


def _peers(args, texts) -> list[str]:
    config = _config(args)
    return [agent_did(config, t) for t in texts]


def _done(args, result: dict, line: str) -> int:
    shown = {k: v for k, v in result.items() if k != "push"}
    if args.json:
        print_json(shown)
    else:
        print(terminal_safe(line))
    return 0


def cmd_goal_add(args) -> int:
    kwargs = {"title": args.title, "description": args.description, "priority": args.priority,
              "criteria": args.criterion, "constraints": args.constraint,
              "participants": _peers(args, args.participant), "public": args.public, "tags": args.tag,
              "parent": args.parent}
    result = _act(args, "goal_add", kwargs)
    return _done(args, result, result["lineage"])


def _me(args) -> str | None:
    return open_identity(_config(args)).did if args.mine else None


def cmd_goal_list(args) -> int:
    rows = _act(args, "goal_list", {"status": args.status, "me": _me(args)})
    print_rows(args, rows, lambda r: f"{short_container_id(r['lineage'])}  {r['status']:9}  "
                                     f"{r['tasks_open']}/{r['tasks_total']} open  {r['title']}"
                                     + (f"  [{r['forks']} fork(s)]" if r.get("forks") else ""))
    return 0


def cmd_goal_show(args) -> int:
    tree = _act(args, "goal_show", {"goal": args.goal})
    if args.json:
        print_json(tree)
        return 0
    for line in tree_lines(tree, verbose=args.verbose):
        print(terminal_safe(line))
    return 0


def _name(tree: dict, did: str, verbose: bool) -> str:
    return did if verbose else who(did, tree.get("names", {}).get(did))


def _due_text(tree: dict, t: dict, verbose: bool) -> str:
    state = t.get("due")
    names = [_name(tree, d, verbose) for d in t["assigned_to"]]
    offers = [_name(tree, c, verbose) for o in t.get("offers", []) for c in o["candidates"]]
    parts = [" ".join(names) if names else "(unassigned)"]
    if state == "holder_dead":
        dead = [d for d in t["assigned_to"]]
        parts = [f"holder dead: {', '.join(_name(tree, d, verbose) for d in dead)}"]
    elif state == "overdue":
        parts.append(f"overdue since {_clock(t.get('overdue_at_ms'))}")
    elif state == "due":
        parts.append(f"due {_clock(t.get('due_at_ms'))}")
    elif state == "needs_decision":
        parts.append("needs a decision (contested)")
    elif state == "fork":
        parts.append(f"fork ({t.get('forks')} more head(s))")
    elif state == "goal_closed":
        parts.append("goal closed")
    elif t["assigned_to"] and t["status"] not in ("completed", "failed", "abandoned") and t.get("next_check_ms"):
        parts.append(f"check {_clock(t['next_check_ms'])}")
    if offers and state != "fork":
        parts.append(f"offer open to {', '.join(offers)}")
    return ", ".join(parts[:1]) + ("  " + ", ".join(parts[1:]) if parts[1:] else "")


def tree_lines(tree: dict, verbose: bool = False) -> list[str]:
    """``goal show`` as lines (gmp.md section 10): the goal, then its tasks and subtasks."""
    lines = [f"● {tree['title']}  [{tree['status']}]  {tree['tasks_total']} task(s), {tree['tasks_completed']} done"
             f"  {short_container_id(tree['lineage'])}"]

    def walk(tasks: list[dict], prefix: str) -> None:
        for i, t in enumerate(tasks):
            last = i == len(tasks) - 1
            needs = t.get("due") not in (None, "due") and t["status"] not in ("completed", "failed", "abandoned")
            icon = "!" if needs else _ICONS.get(t["status"], "?")
            status = t["status"] + (f" {round(t['progress'] * 100)} %" if t.get("progress") is not None
                                    and t["status"] == "in_progress" else "")
            width = max(8, 26 - len(prefix))  # the status column lines up at every depth
            lines.append(f"{prefix}{'└─' if last else '├─'} {icon} {t['title'][:40]:{width}} {status:15} "
                         f"{_due_text(tree, t, verbose)}  {short_container_id(t['lineage'])}")
            walk(t.get("subtasks", []), prefix + ("   " if last else "│  "))

    walk(tree["tasks"], "")
    return lines


def cmd_goal_update(args) -> int:
    kwargs = {"goal": args.goal, "status": args.status, "title": args.title, "description": args.description,
              "priority": args.priority, "add_participants": _peers(args, args.add_participant),
              "remove_participants": _peers(args, args.remove_participant)}
    result = _act(args, "goal_update", kwargs)
    return _done(args, result, f"{result['did']} ({result['status']})")


def cmd_goal_cancel(args) -> int:
    result = _act(args, "goal_cancel", {"goal": args.goal, "reason": args.reason})
    abandoned = len(result.get("abandoned") or [])
    return _done(args, result, f"{result['did']} (cancelled; {abandoned} open task(s) abandoned)")


def cmd_task_add(args) -> int:
    now = now_ms()
    kwargs = {"goal": args.goal, "title": args.title, "description": args.description, "parent": args.parent,
              "depends": args.depends, "deadline_ms": when_ms(args.deadline, "--deadline", now) if args.deadline else None,
              "check_every_s": seconds(args.check_every, "--check-every") if args.check_every else None,
              "grace_s": seconds(args.grace, "--grace") if args.grace else None, "rule": args.rule, "tags": args.tag,
              "priority": args.priority}
    result = _act(args, "task_add", kwargs)
    return _done(args, result, result["lineage"])


def _task_line(r: dict) -> str:
    names = [who(d, n) for d, n in zip(r["assigned_to"], r.get("assignee_names") or [None] * len(r["assigned_to"]))]
    progress = f"{round(r['progress'] * 100)}%" if r.get("progress") is not None else "-"
    return (f"{short_container_id(r['lineage'])}  {r['status']:11} {progress:>4}  "
            f"{(', '.join(names) or '(unassigned)')[:30]:30}  {r['title']}")


def cmd_task_list(args) -> int:
    rows = _act(args, "task_list", {"goal": args.goal, "me": _me(args), "status": args.status})
    print_rows(args, rows, _task_line)
    return 0


def cmd_task_show(args) -> int:
    t = _act(args, "task_show", {"task": args.task})
    if args.json:
        print_json(t)
        return 0
    names = t.get("names", {})
    lines = [f"task:      {t['title']}  [{t['status']}]", f"lineage:   {t['lineage']}", f"shown:     {t['container_did']}",
             f"goal:      {t['goal_lineage']}", f"creator:   {who(t['creator_did'], names.get(t['creator_did']))}",
             f"assigned:  {', '.join(who(d, names.get(d)) for d in t['assigned_to']) or '(unassigned)'}",
             f"progress:  {'-' if t['progress'] is None else str(round(t['progress'] * 100)) + ' %'}",
             f"deadline:  {_clock(t['deadline_ms'])}   next check: {_clock(t['next_check_ms'])}"
             f"   overdue at: {_clock(t['overdue_at_ms'])}",
             f"due:       {t['due'] or '-'}   reason: {t['reason'] or '-'}"]
    if t["forks"]:
        lines.append(f"forks:     {t['forks']} (heads: {', '.join(short_container_id(h) for h in t['heads'])})")
    if t.get("description"):
        lines.append(f"about:     {t['description']}")
    if t.get("result"):  # what the finished task gave, and whether its creator reviewed it
        r, review = t["result"], t.get("review")
        lines.append(f"result:    {r['status']} by {who(r['by'], names.get(r['by']))} at {_clock(r['at_ms'])}")
        lines += [f"  {line}" for line in (r.get("summary") or "(no summary)").splitlines()]
        lines.append(f"review:    {review['verdict'] + (': ' + review['reason'] if review.get('reason') else '')}"
                     if review else "review:    not reviewed (`meshnode task review TASK accept|reject`)")
    elif t.get("notes"):
        lines.append(f"notes:     {t['notes']}")
    lines.append("holders:")
    for h in t["holders"] or []:
        by = h.get("ended_by")
        steward = f" by steward {who(by, names.get(by))}" if by and by not in (h["assignee"], t["creator_did"]) else ""
        lines.append(f"  {who(h['assignee'], names.get(h['assignee']))}  {_clock(h['since_ms'])} .. "
                     f"{_clock(h['until_ms']) if h['until_ms'] else 'now'}  {h['ended'] or 'holds'}{steward}")
    lines.append("entries:")
    for e in t["entries"] or []:
        counted = "counted" if e["counted"] else f"not counted: {e['reason']}"
        extra = f" {round(e['progress'] * 100)} %" if e.get("progress") is not None else ""
        lines.append(f"  {_clock(e['timestamp_ms'])}  {e['kind']}{extra}  by {who(e['signer'], names.get(e['signer']))}"
                     f"  ({counted})  {short_container_id(e['did'])}" + (f"  {e['summary']}" if e.get("summary") else ""))
    for line in lines:
        print(terminal_safe(line))
    return 0


def cmd_task_update(args) -> int:
    kwargs = {"task": args.task, "status": args.status, "notes": args.notes, "title": args.title,
              "description": args.description, "progress": args.progress,
              "next_check_ms": when_ms(args.next_check, "--next-check", now_ms()) if args.next_check else None}
    result = _act(args, "task_update", kwargs)
    return _done(args, result, f"{result['did']} ({result['status']})")


def cmd_task_assign(args) -> int:
    expires = seconds(args.expires, "--expires") if args.expires else None
    if sum(map(bool, (args.to, args.interest, args.basis))) != 1:
        raise GmpCliError("bad_args", "task assign takes --to PEER (repeatable), --interest TAG or --basis RESULT")
    if args.interest:  # the mesh's interest lookup: only a running node can do it
        kwargs = {"task": args.task, "interest": args.interest, "candidates_max": args.candidates, "expires_s": expires}
        result = _ask_node(_config(args), "task_assign", kwargs)
    else:
        kwargs = {"task": args.task, "expires_s": expires}
        kwargs.update({"basis": args.basis} if args.basis else {"candidates": _peers(args, args.to),
                                                                 "selection": "direct"})
        result = _act(args, "task_assign", kwargs)
    if "offer" not in result:
        return _done(args, result, f"{result['did']} (assigned to yourself)")
    return _done(args, result, f"{result['did']} (offered until {_clock(result.get('expires_ms'))})")


def cmd_task_nominate(args) -> int:
    result = _act(args, "task_nominate", {"task": args.task, "candidate": _peers(args, [args.peer])[0]})
    return _done(args, result, f"{result['did']} (nominated; participants vote on it with `meshnode consensus vote`)")


def cmd_task_answer(args) -> int:
    kwargs = {"task": args.task, "offer": args.offer}
    if args.answer == "refuse":
        kwargs["reason"] = args.reason
    result = _act(args, f"task_{args.answer}", kwargs)
    return _done(args, result, result["did"])


def cmd_task_progress(args) -> int:
    kwargs = {"task": args.task, "progress": args.progress, "summary": args.summary, "check_in": args.check_in}
    result = _act(args, "task_progress", kwargs)
    return _done(args, result, result["did"])


def cmd_task_done(args) -> int:
    result = _act(args, "task_done", {"task": args.task, "summary": args.summary, "failed": args.failed})
    return _done(args, result, f"{result['did']} ({result['status']})")


def cmd_task_release(args) -> int:
    result = _act(args, "task_release", {"task": args.task})
    return _done(args, result, f"{result['did']} (released)")


def cmd_task_review(args) -> int:
    result = _act(args, "task_review", {"task": args.task, "verdict": args.verdict, "reason": args.reason,
                                        "reassign": args.reassign})
    return _done(args, result, f"{result['verdict']}" + (f": {result['did']} ({result['status']})"
                                                         if result.get("did") else ""))


def cmd_task_due(args) -> int:
    rows = _act(args, "task_due", {"include_all": args.all})

    def line(r: dict) -> str:
        names = [who(d, n) for d, n in zip(r["assigned_to"], r.get("assignee_names") or [None] * len(r["assigned_to"]))]
        return (f"{(r.get('due') or 'ok'):14} {short_container_id(r['lineage'])}  {r['status']:11} "
                f"{(', '.join(names) or '(unassigned)')[:30]:30}  {r['title']}")

    print_rows(args, rows, line)
    return 0
