"""``meshnode inbox [--thread T] [--count] | inbox decide KIND REF DECISION``: what waits for the person,
the actions of meshnode.app.actions.inbox (through the running node, or on the home's database and
workspace with the node stopped)."""

from __future__ import annotations

import time

from meshnode.faces.cli.common import _config, act, print_json, print_rows


def _run(args, name: str, given: dict):
    from meshnode.engines.gate import setup as gate_setup

    config = _config(args)
    return act(config, name, given, on_home=lambda: {"jail": gate_setup.jail(config)})


def _when(ms) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000)) if ms else "-"


def _line(item: dict) -> str:
    where = f"  (thread {item['thread']})" if item.get("thread") else (
        f"  (A2A context {item['context_id']})" if item.get("context_id") else "")
    decisions = "|".join(a["name"] for a in item["actions"])
    return f"{_when(item['when_ms'])}  {item['kind']} {item['ref']}: {item['summary']}{where}  [{decisions}]"


def cmd_inbox(args) -> int:
    if args.count:
        counted = _run(args, "inbox_count", {})
        if args.json:
            print_json(counted)
        else:
            shown = ", ".join(f"{n} {k}" for k, n in counted["by_kind"].items() if n)
            print(f"{counted['total']} waiting" + (f": {shown}" if shown else ""))
        return 0
    listed = _run(args, "inbox", {"thread": args.thread} if args.thread else {})
    if args.json:
        print_json(listed)
        return 0
    print_rows(args, listed["items"], _line)
    if listed["items"]:
        print("decide: meshnode inbox decide KIND REF DECISION  (or the web notebook's /inbox)")
    return 0


def cmd_decide(args) -> int:
    done = _run(args, "inbox_decide", {"kind": args.kind, "ref": args.ref, "decision": args.decision})
    if args.json:
        print_json(done)
    else:
        print(f"{args.kind} {args.ref}: {args.decision} done; {done['count']['total']} still waiting")
    return 0
