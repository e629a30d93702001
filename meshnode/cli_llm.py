"""``meshnode llm add|update|list|select|remove``: the LLMs the cognitive core thinks with.

Changes go to the database; a running node reads the registry at every tick,
so they apply from the next one.
"""

from __future__ import annotations

import argparse
import json
import sys

from meshnode.cli_common import with_db
from meshnode.cognition import registry
from meshnode.cognition.llm import Endpoint


def add_parsers(sub, common) -> None:
    llm = sub.add_parser("llm", parents=[common], help="the LLMs of the cognitive core (OpenAI-compatible)")
    llm = llm.add_subparsers(dest="llm_command", required=True, metavar="SUBCOMMAND")
    p = llm.add_parser("add", parents=[common], help="register an OpenAI-compatible chat endpoint",
                       epilog="example: meshnode llm add local --url http://127.0.0.1:11434/v1 --model qwen2.5:7b")
    p.add_argument("name", help="a name for it, used by select and remove")
    p.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:11434/v1 (Ollama)")
    p.add_argument("--model", required=True, help="the model name the endpoint expects")
    p.add_argument("--priority", type=int, default=0, help="higher is tried first")
    p.add_argument("--validator", action="store_true", help="a validator, not a main LLM")
    p.add_argument("--api-key-env", help="the environment variable holding its API key (never stored)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    p.set_defaults(func=cmd_add)
    p = llm.add_parser("update", parents=[common], help="change some settings of a registered LLM",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Change the given settings of a registered LLM and keep the rest, e.g.\n"
                                   "  meshnode llm update local --timeout 300 --priority 5")
    p.add_argument("name", help="the LLM's name (see `meshnode llm list`)")
    p.add_argument("--url", help="a new base URL, e.g. http://127.0.0.1:11434/v1")
    p.add_argument("--model", help="a new model name")
    p.add_argument("--priority", type=int, help="a new priority (higher is tried first)")
    role = p.add_mutually_exclusive_group()
    role.add_argument("--validator", dest="validator", action="store_const", const=True,
                      help="make it a validator")
    role.add_argument("--main", dest="validator", action="store_const", const=False,
                      help="make it a main LLM (not a validator)")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", help="the environment variable holding its API key (never stored)")
    key.add_argument("--no-api-key", action="store_true", help="send no API key")
    p.add_argument("--timeout", type=float, help="seconds per request")
    p.set_defaults(func=cmd_update)
    p = llm.add_parser("list", parents=[common], help="registered LLMs, the main one first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)
    p = llm.add_parser("select", parents=[common], help="make an LLM the main one")
    p.add_argument("name", help="its name (as `meshnode llm list` shows)")
    p.set_defaults(func=cmd_select)
    p = llm.add_parser("remove", parents=[common], help="forget an LLM")
    p.add_argument("name", help="its name (as `meshnode llm list` shows)")
    p.set_defaults(func=cmd_remove)


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
