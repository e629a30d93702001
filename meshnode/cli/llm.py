"""``meshnode llm add|update|list|select|remove``: the LLMs the cognitive core thinks with.

Changes go to the database; a running node reads the registry at every tick,
so they apply from the next one.
"""

from __future__ import annotations

import json
import sys

from meshnode.cli.common import with_db
from meshnode.records.mind import registry
from meshnode.records.mind.registry import Endpoint


def cmd_add(args) -> int:
    endpoint = Endpoint(args.name, args.url, args.model, args.priority, args.validator, args.api_key_env, args.timeout)
    with_db(args, lambda db: registry.add(db, endpoint))
    print(f"added {args.name}")
    return 0


def cmd_update(args) -> int:
    changes = {k: v for k, v in (("url", args.url), ("model", args.model), ("priority", args.priority),
                                 ("validator", args.validator), ("timeout_s", args.timeout)) if v is not None}
    if args.api_key_env is not None or args.no_api_key:
        changes["api_key_env"] = None if args.no_api_key else args.api_key_env
    if not changes:
        print("meshnode: llm update: give at least one setting to change (see --help)", file=sys.stderr)
        return 2
    e = with_db(args, lambda db: registry.update(db, args.name, **changes))
    role = "validator" if e.validator else "main"
    print(f"updated {e.id}: {role}, priority {e.priority}, {e.model} at {e.base_url}, timeout {e.timeout_s:g} s")
    return 0


def cmd_list(args) -> int:
    rows = with_db(args, registry.endpoints)
    if args.json:
        print(json.dumps([e.__dict__ for e in rows], indent=2))
        return 0
    for e in rows:
        role = "validator" if e.validator else "main"
        print(f"{e.id:20} {role:9} priority {e.priority:3}  {e.model} at {e.base_url}")
    if not rows:
        print("no LLM registered: the cognitive core runs in core-outage mode")
    return 0


def cmd_select(args) -> int:
    with_db(args, lambda db: registry.select(db, args.name))
    print(f"{args.name} is now the main LLM")
    return 0


def cmd_remove(args) -> int:
    with_db(args, lambda db: registry.remove(db, args.name))
    print(f"removed {args.name}")
    return 0
