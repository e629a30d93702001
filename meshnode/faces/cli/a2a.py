"""``meshnode a2a token add|list|remove``: the bearer tokens of the known parties of the agent's A2A
face (protocols/a2a.md section 4). Works with the node stopped; a running node reads the file again
at the next request.

``meshnode a2a held | reject --all|--party P|--address A | block T | unblock T | blocks``: the held
queue and the blocks, the person's actions of meshnode.app.actions.a2a (through the running node, or
on the home's database with the node stopped)."""

from __future__ import annotations

from meshnode.faces.cli.common import _config, act, print_rows
from meshnode.base.errors import MeshnodeError


def _path(args):
    from meshnode.base.config.a2a import a2a_settings

    config = _config(args)
    return config.home / a2a_settings(config.values).known_tokens_path


def cmd_token_add(args) -> int:
    from meshnode.store.home.party_tokens import add_token

    try:
        token = add_token(_path(args), args.name)
    except (ValueError, PermissionError) as exc:
        raise MeshnodeError("bad_request", str(exc)) from None
    print(token)
    return 0


def cmd_token_list(args) -> int:
    from meshnode.store.home.party_tokens import token_names

    for name in token_names(_path(args)):
        print(name)
    return 0


def cmd_token_remove(args) -> int:
    from meshnode.store.home.party_tokens import remove_token

    if not remove_token(_path(args), args.name):
        raise MeshnodeError("not_found", f"no token for {args.name[:64]}")
    print(f"{args.name}: token withdrawn")
    return 0


def _when(ms: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def cmd_held(args) -> int:
    rows = act(_config(args), "a2a_held", {"limit": args.limit})
    # each message whole (terminal-safe): a person approves exactly what they read
    print_rows(args, rows, lambda r: f"{r['id']:5}  {r['client']} ({r['subnet']})  sender {r['sender']!r}  party"
                                     f" {r['party']}  expires {_when(r['expires_ms'])}\n       {r['text']}")
    return 0


def cmd_reject(args) -> int:
    given = {"all": bool(args.all), **({"party": args.party} if args.party else {}),
             **({"address": args.address} if args.address else {})}
    out = act(_config(args), "a2a_reject", given)
    print(f"{out['count']} held message{'s' if out['count'] != 1 else ''} rejected")
    return 0


def cmd_block(args) -> int:
    out = act(_config(args), "a2a_block", {"target": args.target})
    print(f"{out['kind']} {out['target']} blocked; {len(out['rejected'])} held message(s) rejected")
    return 0


def cmd_unblock(args) -> int:
    out = act(_config(args), "a2a_unblock", {"target": args.target})
    print(f"{out['target']} unblocked")
    return 0


def cmd_blocks(args) -> int:
    rows = act(_config(args), "a2a_blocks", {})
    print_rows(args, rows, lambda r: f"{r['kind']:8} {r['target']}  since {_when(r['created_ms'])} (by {r['decided_by']})")
    return 0
