"""``meshnode ethics add|list|remove``: the ethics policies the agent thinks and is validated under.

Like ``meshnode llm``, these work on the database whether or not a node runs
(SQLite WAL lets them in beside the node's writer); a running node reads the
policies at every tick (context 1).
"""

from __future__ import annotations

from meshnode.records import ethics
from meshnode.cli.common import print_rows, terminal_safe, with_db


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
