"""The running node: identity and store loaded, up until SIGINT or SIGTERM.

For now the node owns no network (that arrives with the libp2p work); it
proves the lifecycle every later part plugs into: start, say who it is, stay
up, stop cleanly and quickly on a signal. Shutdown is the same code path as a
normal exit: the nursery's cancel scope.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import TextIO

import trio

from meshnode.config import Config
from meshnode.container import format_ms, now_ms
from meshnode.errors import StoreError
from meshnode.identity.keys import NodeKey
from meshnode.store import Store

log = logging.getLogger("meshnode.node")
STOP_BUSY_TIMEOUT_MS = 500


async def run_node(config: Config, key: NodeKey, out: TextIO = sys.stdout) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with await Store.open(config.db_path) as store:
            await store.write(_heartbeat, "node", "started")
            print(f"did:      {key.did}", file=out)
            print(f"peer id:  {key.peer_id}", file=out)
            print(f"name:     {config.name}", file=out)
            print(f"home:     {config.home}", file=out)
            print(f"database: {config.db_path} (schema v{store.version})", file=out)
            print("ready; stop with Ctrl-C", file=out, flush=True)
            async for signum in signals:
                log.info("received %s, stopping", signal.Signals(signum).name)
                break
            with trio.CancelScope(shield=True):
                try:  # best effort, and quick: stopping must not wait on another process's lock
                    await store.write(_heartbeat, "node", "stopped", STOP_BUSY_TIMEOUT_MS)
                except StoreError as exc:
                    log.warning("could not record the stop: %s", exc.reason)
    print("stopped", file=out, flush=True)


def _heartbeat(db, name: str, state: str, busy_timeout_ms: int | None = None) -> None:
    with db.transaction(busy_timeout_ms) as conn:
        conn.execute(
            "INSERT INTO main_process (name, heartbeat, stop) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET heartbeat = excluded.heartbeat, stop = excluded.stop",
            (name, format_ms(now_ms()), int(state == "stopped")),
        )
