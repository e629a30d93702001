"""CLI for petnames: ``meshnode name set|unset|list`` (the ``name_set``, ``name_unset`` and ``names`` actions)."""

from __future__ import annotations

from meshnode.faces.cli.common import _config, act, print_rows, terminal_safe


def _line(r: dict) -> str:
    """One agent: what it is shown as, then where that comes from, then its whole DID."""
    origin = ("this node" if r["own"] else "") or (f"petname; announced {r['announced']!r}" if r["petname"]
                                                 and r["announced"] and r["announced"] != r["petname"] else
                                                 "petname" if r["petname"] else
                                                 "announced; another agent has this name too" if r["ambiguous"] else
                                                 "announced" if r["announced"] else "no name")
    return f"{r['name'][:40]:40} {origin[:48]:48} {r['did']}"


def cmd_set(args) -> int:
    """One line: the agent's whole DID, its petname, and the name it announced (if another)."""
    r = act(_config(args), "name_set", {"agent": args.agent, "petname": args.petname})
    calls = f"; it calls itself {r['announced']!r}" if r["announced"] and r["announced"] != r["petname"] else ""
    print(terminal_safe(f"{r['did']} is now {r['petname']!r} here{calls}"))
    return 0


def cmd_unset(args) -> int:
    r = act(_config(args), "name_unset", {"agent": args.agent})
    print(terminal_safe(f"petname forgotten: {r['did']} is shown as {r['name']!r} again"))
    return 0


def cmd_list(args) -> int:
    print_rows(args, act(_config(args), "names", {}), _line)
    return 0
