"""``meshnode children list|show|start|stop|remove``: the child nodes this node spawned.

Listing, showing and removing work with or without a running node (``act``: the same action,
meshnode.app.actions.children, either way). Starting and stopping act on a local child's own home (its process,
its unit or script: ``spawn.launch``), so they need no parent process; a child on another host is
refused (``not_local``). ``remove --delete-home`` deletes a local child's home only when that
folder holds the child's own meshnode config and key, and stops the child first.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from meshnode.faces.cli.common import _ask_node, _config, act, agent_id, print_fields, print_json, print_rows
from meshnode.base.config import load_config
from meshnode.base.container import format_ms, now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.engines.spawn import autostart, launch
from meshnode.base.errors import SpawnError


def _ago(ms: int | None, now: int) -> str:
    if ms is None:
        return "never"
    s = max(0, (now - int(ms)) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return f"{s}s ago"


def with_process(rec: dict) -> dict:
    """A local active child's row with its ``process`` (spawn.launch.process_state: running, or how
    it ended); the state a person reads is then ``running`` or ``stopped (exit N)``."""
    if rec["host"] == "local" and rec["home"] and rec["state"] == "active":
        rec["process"] = launch.process_state(Path(rec["home"]))
    return rec


def _state(rec: dict) -> str:
    return launch.describe(rec["process"]) if rec.get("process") else rec["state"]


def cmd_list(args) -> int:
    config = _config(args)
    rows = [with_process(r) for r in act(config, "children", {"all": args.all})]
    now = now_ms()
    if rows and not args.json:
        print(f"{'child':12} {'name':16} {'kind':7} {'depth':5} {'host':10} {'state':18} {'liveness':8} last heard")
    print_rows(args, rows, lambda r: f"{agent_id(r['did']):12} {r['name'][:16]:16} {r['kind']:7} "
                                     f"{r['depth']:<5} {(r['host'] or '-')[:10]:10} {_state(r):18} {r['liveness']:8} "
                                     f"{'-' if r['state'] == 'removed' else _ago(r['last_heard_ms'], now)}")
    return 0


def _child(config, text: str) -> dict:
    return act(config, "child_show", {"did": text})


def cmd_show(args) -> int:
    rec = with_process(_child(_config(args), args.did))
    print_fields(args, rec if args.json else _readable(rec))
    return 0


def _readable(rec: dict) -> dict:
    """Times as UTC text (and how long ago), the seed report as counts a person reads at a glance."""
    now = now_ms()
    out = dict(rec)
    if out.get("process"):
        out["process"] = _state(rec) + (f", pid {rec['process']['pid']}" if rec["process"].get("pid") else "")
    for key in ("created_ms", "removed_ms", "last_heard_ms"):
        ms = out.pop(key)
        out[key[:-3]] = "-" if ms is None else f"{format_ms(int(ms))} ({_ago(ms, now)})"
    seed = out.pop("seed_report") or {}
    parts = [f"{what} {', '.join(f'{k} {v}' for k, v in sorted(seed[what].items()))}"
             for what in ("copied", "withheld", "refused") if seed.get(what)]
    out["seed"] = "; ".join(parts) or "nothing copied"
    if seed.get("reasons"):
        out["seed refusals"] = " | ".join(seed["reasons"][:5])
    return out


def _local_home(rec: dict) -> Path:
    if rec["host"] != "local" or not rec["home"]:
        raise SpawnError("not_local", f"{rec['name']} runs on another host ({rec['host']}): start or stop it there")
    return Path(rec["home"])


def cmd_start(args) -> int:
    """By the running parent when there is one (it waits on the process: reaped when it ends),
    else from here (the child is then init's, as a stopped parent cannot wait on it)."""
    config = _config(args)
    result = _ask_node(config, "child_start", {"did": args.did}, required=False)
    if result is not None:
        rec = result
    else:
        rec = _child(config, args.did)
        if rec["state"] != "active":
            raise SpawnError("not_a_child", f"{rec['name']} was removed; spawn a new child instead")
        result = launch.launch(_local_home(rec), rec["autostart"])
    if args.json:
        print_json({"did": rec["did"], **result})
    else:
        pid = f", pid {result['pid']}" if result.get("pid") else ""
        print(f"started {rec['name']} ({rec['did']}) via {result['via']}{pid}; log: {result.get('log')}")
    return 0


def cmd_stop(args) -> int:
    config = _config(args)
    live = _ask_node(config, "child_stop", {"did": args.did}, required=False)
    if live is not None:
        rec, stopped = live, live["stopped"]
    else:
        rec = _child(config, args.did)
        stopped = launch.stop(_local_home(rec), rec["autostart"])
    if args.json:
        print_json({"did": rec["did"], "stopped": stopped})
    else:
        print(f"{'stopped' if stopped else 'was not running'}: {rec['name']} ({rec['did']})")
    return 0


def cmd_remove(args) -> int:
    config = _config(args)
    rec = _child(config, args.did)
    home = deletable_home(rec, config.home) if args.delete_home else None  # refused before anything changes
    removed = act(config, "child_remove", {"did": rec["did"]})
    if home is not None:
        if launch.running_pid(home) is not None and not launch.stop(home, rec["autostart"]):
            raise SpawnError("still_running", f"{rec['name']} is removed but did not stop; its home {home} is kept")
        autostart.uninstall(home)  # a unit outside the home (systemd) must not start a node whose home is gone
        shutil.rmtree(home)
    if args.json:
        print_json({**removed, "home_deleted": str(home) if home else None})
    else:
        print(f"removed: {rec['name']} ({rec['did']})" + (f"; home deleted: {home}" if home else
                                                          f"; home kept: {rec['home']}" if rec["home"] else ""))
    return 0


def deletable_home(rec: dict, parent_home: Path) -> Path:
    """The child's home, when it may be deleted: a local child's folder, not the parent's own nor
    one holding it, with a meshnode config whose key file names the child's DID. Anything else is
    refused (SpawnError ``home_not_deletable``), so a wrong row can never delete another folder."""
    home = _local_home(rec).resolve()
    parent = Path(parent_home).resolve()

    def refuse(why: str) -> SpawnError:
        return SpawnError("home_not_deletable", f"{home} is not deleted: {why}")

    if home == parent or home in parent.parents or not home.is_dir():
        raise refuse("it is not a child's own folder")
    if not (home / "config.toml").is_file():
        raise refuse("it holds no meshnode config.toml")
    try:
        key_path = load_config(home, environ={}).key_path
        did = json.loads(key_path.read_text(encoding="utf-8")).get("did")
    except (MeshnodeError, OSError, ValueError, AttributeError) as exc:
        raise refuse(f"its config or key cannot be read ({getattr(exc, 'reason', exc)})") from None
    if did != rec["did"]:
        raise refuse(f"its key is not the child's ({str(did)[:60]})")
    return home
