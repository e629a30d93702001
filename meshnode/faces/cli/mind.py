"""``meshnode mind [held|release|drop]``: the cognitive core's state, and its held commands.

    meshnode mind [--json]              mode, held commands, each validator's weight and why, metrics
    meshnode mind held [--all] [--json] commands the validators held (or gave no verdict on)
    meshnode mind release ID... | --all let them run
    meshnode mind drop ID... | --all    discard them
    meshnode mind pause | resume        stop the agent (no tick) until resumed; kept across restarts
    meshnode mind ticks [TICK] [--json] the last ticks; one tick's contexts, answer and commands

Each is an action of the application layer (meshnode.app.actions.mind), for the person at the
CLI: with the node running through its control socket (a release runs the commands at once);
with it stopped on the home's database, and the node runs what was released when it starts.
Pausing, resuming and ticking need the running node.
"""

from __future__ import annotations

import json
import time

from meshnode.faces.cli.common import _ask_node, _config, act, print_json, print_rows, terminal_safe
from meshnode.base.errors import MeshnodeError


def _mind_view() -> dict:
    from meshnode.engines.cognition import mind_view

    return {"mind_view": mind_view.view}


def cmd_mind(args) -> int:
    view = act(_config(args), "mind", {}, on_home=_mind_view)
    if args.json:
        print_json(view)
        return 0
    mode = view.get("mode")
    if mode is None:
        print("mode:        (the node is not running)")
    else:
        print(f"mode:        {mode}" + (f", LLM {view['llm']}" if view.get("llm") else "")
              + f", tick {view.get('ticks', 0)}")
        if view.get("paused"):
            print(f"paused:      by {view.get('paused_by')}; `meshnode mind resume` lets it think again")
    h = view["held"]
    if h["count"]:
        print(terminal_safe(f"held:        {h['count']} command(s); newest: {h['reason']}"))
        print("             see `meshnode mind held`, then `meshnode mind release|drop ID...`")
    else:
        print("held:        none")
    if h["released_waiting"]:
        print(f"released:    {h['released_waiting']} command(s) waiting for the node to run them")
    failing = view.get("validators_failing") or {}
    print("validators:" + ("  none registered (answers pass unvalidated: auto_pass)" if not view["validators"] else ""))
    for v in view["validators"]:
        base = "?" if v["base_trust"] is None else f"{v['base_trust']:.2f}"
        weight = "?" if v["weight"] is None else f"{v['weight']:.2f}"
        print(terminal_safe(f"  {v['validator'][:48]:24} {v['kind']:5} trust {base} x {v['factor']:.2f}"
                            f" = {weight}  ({v['why']})"))
        f = failing.get(v["validator"])
        if f:
            print(terminal_safe("      " + _failing(f)))
    for name, f in failing.items():
        if not any(v["validator"] == name for v in view["validators"]):
            print(terminal_safe(f"  {name[:48]:24} {_failing(f)}"))
    m = view["validation"]
    print(f"validation:  {m['answers']} answers, coverage {m['coverage']}, agreement {m['agreement']}")
    for server in view.get("mcp_servers") or []:  # the agent's outside tools ([mcp.servers])
        print(terminal_safe(f"outside:     {mcp_server_line(server)}"))
    if view["emergency_to_revisit"]:
        print(f"isolated:    {view['emergency_to_revisit']} decision(s) taken without the mesh, to revisit"
              " when it is back")
    return 0


def mcp_server_line(s: dict) -> str:
    """One outside tools' server, for a person: up with its tools, or why not and its stderr's last line."""
    state = f"{len(s['tools'])} tools" if s["status"] == "up" else s.get("error") or s["status"]
    line = f"{s['server']} {s['status']} ({state}{', sandboxed' if s.get('sandboxed') else ''})"
    return line + (f"; its stderr: {s['stderr']}" if s["status"] != "up" and s.get("stderr") else "")


def _failing(f: dict) -> str:
    if f["set_aside"]:
        at = "at the next answer" if f["retry_due"] else \
            "at " + time.strftime("%H:%M:%S", time.localtime(f["retry_at_ms"] / 1000))
        return f"set aside after {f['failures_in_row']} failures in a row ({f['last_error']}); asked again {at}"
    return f"{f['failures_in_row']} failure(s) in a row ({f['last_error']})"


def cmd_held(args) -> int:
    status = None if args.all else "held"
    if not 1 <= args.limit <= 10_000:
        raise MeshnodeError("bad_limit", "--limit must be between 1 and 10000")
    rows = act(_config(args), "mind_held", {"status": status, "limit": args.limit})
    print_rows(args, rows, _held_lines)
    return 0


def _held_lines(r: dict) -> str:
    """A held command: its number, state, tick, type and arguments; why it is held; its result."""
    args_text = json.dumps(r["command"].get("args", {}), ensure_ascii=False)
    args_text = args_text if len(args_text) <= 200 else args_text[:200] + "..."
    lines = [f"{r['id']:5}  {r['status']:8} tick {r['tick']:<5} {r['type']} ({r['cmd_id']}) {args_text}",
             f"       {r['kind']}: {r['reason']}"]
    if r["result"] is not None and r["status"] in ("done", "failed"):
        lines.append(f"       result: {json.dumps(r['result'], ensure_ascii=False)[:200]}")
    return "\n".join(map(terminal_safe, lines))  # each line escaped (a newline inside one too)


def cmd_decide(args) -> int:
    if bool(args.ids) == bool(args.all):
        raise MeshnodeError("bad_ids", "name the held commands by number (see `meshnode mind held`), or give --all")
    ids = None if args.all else args.ids
    command = "mind_release" if args.release else "mind_drop"
    out = act(_config(args), command, {"ids": ids})
    if args.json:
        print_json(out)
        return 0
    decided = out["released" if args.release else "dropped"]
    if not decided:
        print("(no held commands)")
        return 0
    verb = "released" if args.release else "dropped"
    print(f"{verb} {len(decided)}: " + ", ".join(f"#{r['id']} {r['type']}" for r in decided))
    if args.release:
        if out.get("offline"):
            print("the node runs them when it starts")
        elif out.get("cognition") == "off":
            print("the cognitive cycle is off here ([cognition] enabled = false): they run when it is on")
        for r in out.get("ran", []):
            outcome = "ok" if r["status"] == "ok" else f"error: {r.get('error')}"
            print(terminal_safe(f"  #{r['id']} {r['type']} ({r['cmd_id']}): {outcome}"))
    return 0


def cmd_pause(args) -> int:
    out = _ask_node(_config(args), "mind_pause" if args.pause else "mind_resume", {})
    if args.json:
        print_json(out)
        return 0
    print(f"the agent is {'paused' if out.get('paused') else 'running'} (tick {out.get('ticks', 0)})")
    return 0


def cmd_ticks(args) -> int:
    config = _config(args)
    if args.tick is None:
        if not 1 <= args.limit <= 500:
            raise MeshnodeError("bad_limit", "--limit must be between 1 and 500")
        rows = act(config, "mind_ticks", {"limit": args.limit})
        print_rows(args, rows, _tick_line)
        return 0
    t = act(config, "mind_tick_show", {"tick": args.tick})
    if args.json:
        print_json(t)
        return 0
    print(terminal_safe(_tick_line(t)))
    for c in t["contexts"]:
        print(terminal_safe(f"\n## {c['title']}\n{c['text']}", keep_newlines=True))
    if t["answer"] is not None:
        print(terminal_safe(f"\n## Answer\n{t['answer']}", keep_newlines=True))
    if t["commands"]:
        print("\n## Commands")
        for c in t["commands"]:
            print(terminal_safe(f"{c['name']} [{c['status']}] {json.dumps(c['value'], ensure_ascii=False)[:300]}"))
    if t["held"]:
        print("\nheld: " + ", ".join(f"#{i}" for i in t["held"]) + "  (`meshnode mind held`)")
    return 0


def _tick_line(r: dict) -> str:
    s = r.get("summary") or {}
    when = time.strftime("%H:%M:%S", time.localtime(r["started_ms"] / 1000))
    took = "running" if r["duration_ms"] is None else f"{r['duration_ms'] / 1000:.1f}s"
    llm = f"{r['llm_id']} {r['llm_ms'] / 1000:.1f}s" if r["llm_id"] and r["llm_ms"] is not None else "no LLM"
    what = (f"{s.get('commands', 0)} command(s)" + (", repeated" if s.get("repeated") else "")
            + ("" if s.get("ran", True) else ", held") if "commands" in s else s.get("error", ""))
    return (f"{r['tick']:6}  {when}  {took:>7}  {r['mode']:11} {llm}  {what}"
            + (f"  wake {r['wake_job']}" if r["wake_job"] else ""))
