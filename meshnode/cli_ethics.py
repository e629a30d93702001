"""``meshnode ethics add|list|remove``: the ethics policies the agent thinks and is validated under.

Like ``meshnode llm``, these work on the database whether or not a node runs
(SQLite WAL lets them in beside the node's writer); a running node reads the
policies at every tick (context 1).
"""

from __future__ import annotations

import argparse

from meshnode import ethics
from meshnode.cli_common import print_rows, terminal_safe, with_db


def add_parsers(sub, common) -> None:
    p = sub.add_parser("ethics", parents=[common], help="ethics policies: the norms the agent thinks under",
                       description="Ethics policies (seed 000, context 1): shown to the agent at every tick.")
    eth = p.add_subparsers(dest="ethics_command", required=True, metavar="SUBCOMMAND")
    p = eth.add_parser("add", parents=[common], help="add a policy (or --replace one of yours)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Add an ethics policy: a name and one or more principles, e.g.\n"
                                   "  meshnode ethics add privacy \"never share the person's notes without asking\"")
    p.add_argument("name", help="the policy's name: 1 to 64 letters, digits or ._-")
    p.add_argument("principles", nargs="+", metavar="PRINCIPLE", help="a principle, one sentence each")
    p.add_argument("--model-type", help="the kind of ethical model, e.g. deontological, consequentialist")
    p.add_argument("--on-violation", metavar="TEXT", help="what the agent does when a principle is broken")
    p.add_argument("--replace", action="store_true", help="change the policy of that name instead of refusing")
    p.set_defaults(func=cmd_add)
    p = eth.add_parser("list", parents=[common], help="the policies, the person's first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)
    p = eth.add_parser("remove", parents=[common], help="remove a policy")
    p.add_argument("name", help="the policy's name (see `meshnode ethics list`)")
    p.set_defaults(func=cmd_remove)


def cmd_add(args) -> int:
    result = with_db(args, lambda db: ethics.add(db, args.name, args.principles, model_type=args.model_type,
                                                  on_violation=args.on_violation, replace=args.replace))
    print(terminal_safe(f"{'set' if args.replace else 'added'} {result['name']}"
                        f" ({result['principles']} principle(s))"))
    return 0


def cmd_list(args) -> int:
    rows = with_db(args, ethics.listing)
    print_rows(args, rows, _policy_lines)
    return 0


def _policy_lines(p: dict) -> str:
    """A policy: its name, model and who set it; a line per principle; what a violation does."""
    model = f" ({p['model_type']})" if p["model_type"] else ""
    lines = [f"{p['name']}{model}  set by the {p['set_by']}, version {p['version']}"]
    lines += [f"  - {x}" for x in p["principles"]]
    if p["on_violation"]:
        lines.append(f"  on violation: {p['on_violation']}")
    return "\n".join(map(terminal_safe, lines))  # each line escaped (a newline inside one too)


def cmd_remove(args) -> int:
    with_db(args, lambda db: ethics.remove(db, args.name))
    print(terminal_safe(f"removed {args.name}"))
    return 0
