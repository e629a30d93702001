"""``meshnode llm add|update|list|select|remove``: the LLMs the cognitive core thinks with.

Each is an action of the application layer (meshnode.app.actions.llm), for the person at the
CLI: through the running node, or on the home's database when none runs; a running node reads
the registry at every tick, so a change applies from the next one.
"""

from __future__ import annotations

import json
import sys

from meshnode.faces.cli.common import _config, act


def cmd_add(args) -> int:
    act(_config(args), "llm_add", {"name": args.name, "url": args.url, "model": args.model, "priority": args.priority,
                                   "validator": args.validator, "api_key_env": args.api_key_env,
                                   "timeout_s": args.timeout})
    print(f"added {args.name}")
    return 0


def cmd_update(args) -> int:
    changes = {k: v for k, v in (("url", args.url), ("model", args.model), ("priority", args.priority),
                                 ("validator", args.validator), ("timeout_s", args.timeout),
                                 ("api_key_env", args.api_key_env)) if v is not None}
    if args.no_api_key:
        changes["no_api_key"] = True
    if not changes:
        print("meshnode: llm update: give at least one setting to change (see --help)", file=sys.stderr)
        return 2
    e = act(_config(args), "llm_update", {"name": args.name, **changes})
    role = "validator" if e["validator"] else "main"
    print(f"updated {e['id']}: {role}, priority {e['priority']}, {e['model']} at {e['base_url']},"
          f" timeout {e['timeout_s']:g} s")
    return 0


def cmd_list(args) -> int:
    rows = act(_config(args), "llms", {})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for e in rows:
        role = "validator" if e["validator"] else "main"
        print(f"{e['id']:20} {role:9} priority {e['priority']:3}  {e['model']} at {e['base_url']}")
    if not rows:
        print("no LLM registered: the cognitive core runs in core-outage mode")
    return 0


def cmd_select(args) -> int:
    act(_config(args), "llm_select", {"name": args.name})
    print(f"{args.name} is now the main LLM")
    return 0


def cmd_remove(args) -> int:
    act(_config(args), "llm_remove", {"name": args.name})
    print(f"removed {args.name}")
    return 0
