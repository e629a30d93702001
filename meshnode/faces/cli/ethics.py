"""``meshnode ethics add|list|remove``: the ethics policies the agent thinks and is validated under.

Each is an action of the application layer (meshnode.app.actions.ethics), for the person at the
CLI: through the running node, or on the home's database when none runs; a running node reads
the policies at every tick (context 1).
"""

from __future__ import annotations

from meshnode.faces.cli.common import _config, act, print_rows, terminal_safe


def cmd_add(args) -> int:
    result = act(_config(args), "ethics_add", {"name": args.name, "principles": args.principles,
                                               "model_type": args.model_type, "on_violation": args.on_violation,
                                               "replace": args.replace})
    print(terminal_safe(f"{'set' if args.replace else 'added'} {result['name']}"
                        f" ({result['principles']} principle(s))"))
    return 0


def cmd_list(args) -> int:
    rows = act(_config(args), "ethics", {})
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
    act(_config(args), "ethics_remove", {"name": args.name})
    print(terminal_safe(f"removed {args.name}"))
    return 0
