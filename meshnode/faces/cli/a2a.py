"""``meshnode a2a token add|list|remove``: the bearer tokens of the known parties of the agent's A2A
face (protocols/a2a.md section 4). Works with the node stopped; a running node reads the file again
at the next request."""

from __future__ import annotations

from meshnode.faces.cli.common import _config
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
