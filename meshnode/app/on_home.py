"""An action with no node running: on the home's own database, in this process (the CLI's path
when nothing answers on the control socket). The same action a running node would run; what
needs the network waits (a public note is gossiped by nobody now: the next run's sync carries it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.app.dispatch import check_args, dispatch
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Store


async def run_on_home(db_path: Path, open_key: Callable[[], NodeKey], actor: Actor, name: str, args: dict,
                      **fields: Any) -> Any:
    """``open_key()`` is called only for an action that signs (reading needs no passphrase);
    ``fields``: more of the App, as the caller has them on the home (the gate's jail...)."""
    action = check_args(name, args)  # before the database is opened
    key = open_key() if action.signs else None
    async with await Store.open(db_path, create=False) as store:
        return await dispatch(App(store, key, **fields), actor, name, args)
