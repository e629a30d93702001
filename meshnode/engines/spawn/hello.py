"""A bundle child's hello to its parent, and the parent's answer (protocols/spawn.md 8).

The child (``spawn_origin.hello_state = 'pending'``) pushes a ``spawn_hello`` to its parent over
the exchange ``push`` op until the parent's ack accepts it or refuses it for good, or the
invitation expires; a refused child keeps running as a plain node. The parent's exchange service
hands the hello to its ``on_hello`` hook (``parent_hook``, given to the mesh by the node), which
accepts it in one store write.
"""

from __future__ import annotations

import logging
import random

import trio

from meshnode.base.container import DEFAULT_LIMITS
from meshnode.base.container.timefmt import now_ms, parse_ms
from meshnode.base.errors import MeshnodeError
from meshnode.engines.spawn.invitation import HELLO_CLASS, REFUSALS, accept_hello, make_hello
from meshnode.store.database import Database, sql_errors

log = logging.getLogger("meshnode.engines.spawn")
FIRST_DELAY_S, MAX_DELAY_S = 1.0, 60.0  # retries: 1 s doubling to a minute, each ±20 %


class HelloSender:
    """The child's task: say hello to the parent until it answers for good (state accepted or refused)."""

    def __init__(self, store, mesh, key, metrics, clock=now_ms, *, skew_ms: int = DEFAULT_LIMITS.clock_skew_ms,
                 delays: tuple[float, float] = (FIRST_DELAY_S, MAX_DELAY_S)):
        self.store, self.mesh, self.key, self.metrics, self.clock = store, mesh, key, metrics, clock
        self.skew_ms, self.delays = skew_ms, delays
        self.attempts = 0

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        origin = await self.store.read(pending_origin)
        task_status.started()
        if origin is None:
            return
        parent, invitation, expires_ms = origin
        delay = self.delays[0]
        while True:  # the parent decides; the child only stops asking once the invitation has expired
            code, reason = await self._try(parent, invitation)
            if code == "accepted":
                await self._finish("accepted", None, reason)
                return
            if code in REFUSALS:
                await self._finish("refused", code, reason)
                return
            if self.clock() >= expires_ms + self.skew_ms:
                await self._finish("refused", "invitation_expired", "the invitation expired before the parent"
                                   f" answered (last: {code}: {reason})")
                return
            log.info("hello to the parent %s not answered yet (%s: %s); again in %.0f s", parent, code, reason, delay)
            await trio.sleep(delay * random.uniform(0.8, 1.2))  # a retry interval, not a synchronization
            delay = min(delay * 2, self.delays[1])

    async def _try(self, parent: str, invitation: bytes) -> tuple[str, str]:
        """One push of a fresh hello: ("accepted", ...), a refusal code, or a transient failure's code."""
        self.attempts += 1
        hello = make_hello(self.key, invitation, self.mesh.addresses(), self.clock())
        try:
            ack = await self.mesh.push(parent, [hello])
        except MeshnodeError as exc:  # not reachable yet, busy, timeout, ...: try again later
            return exc.code, exc.reason
        if hello.did in ack["accepted"] or hello.did in ack["duplicates"]:
            return "accepted", f"the parent {parent} accepted this node as its child"
        for item in ack["rejected"]:
            if type(item) is dict and item.get("index") == 0:
                return str(item.get("code", "rejected"))[:40], str(item.get("reason", ""))[:200]
        return "no_answer", "the parent's ack named neither acceptance nor refusal"

    async def _finish(self, state: str, code: str | None, reason: str) -> None:
        await self.store.write(set_hello_state, state, code)
        self.metrics.inc("spawn_hello_answered", outcome=code or state)
        if state == "accepted":
            log.info("%s", reason)
        else:
            log.warning("the parent refused this node as its child (%s: %s); it keeps running as a plain node",
                        code, reason)


def parent_hook(store, key, skew_ms: int = DEFAULT_LIMITS.clock_skew_ms, clock=now_ms):
    """The mesh's ``on_hello`` for this parent: None when the hello is accepted, else (code, reason)."""
    async def on_hello(hello, from_did: str) -> tuple[str, str] | None:
        try:
            result = await store.write(accept_hello, hello, parent_did=key.did, now_ms=clock(), skew_ms=skew_ms)
        except MeshnodeError as exc:  # a refusal (SpawnError), or the store failing (the child asks again)
            log.warning("refused the %s of %s: %s: %s", HELLO_CLASS, from_did, exc.code, exc.reason)
            return exc.code, exc.reason
        if not result["again"]:
            log.info("accepted %s (%s, %s) as a child from %s", from_did, result["name"], result["kind"],
                     result.get("host"))
        return None

    return on_hello


async def start(nursery, config, key, store, mesh, metrics) -> HelloSender | None:
    """Start the child's sender when its hello is pending (the parent's side is ``parent_hook``,
    given to the mesh at construction)."""
    skew_ms = config.limits.clock_skew_ms
    if await store.read(pending_origin) is None:
        return None
    sender = HelloSender(store, mesh, key, metrics, skew_ms=skew_ms)
    nursery.start_soon(sender.run)
    return sender


def pending_origin(db: Database) -> tuple[str, bytes, int] | None:
    """(parent DID, invitation bytes, expiry ms) when this node's hello is pending, else None."""
    from meshnode.base.container import ContainerError, decode_container

    with sql_errors("reading the spawn origin"):
        row = db.conn.execute("SELECT parent_did, invitation FROM spawn_origin WHERE id = 1 AND hello_state = 'pending'"
                              " AND invitation IS NOT NULL").fetchone()
    if row is None:
        return None
    try:  # checked when the bundle was taken; read again here only for the expiry (not against the clock)
        inv = decode_container(bytes(row[1]), now_ms=2**62)
        return row[0], bytes(row[1]), parse_ms(inv.payload["expires"])
    except (ContainerError, KeyError, TypeError) as exc:
        log.warning("the stored invitation cannot be read (%s); no hello is sent", exc)
        return None


def set_hello_state(db: Database, state: str, reason: str | None) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE spawn_origin SET hello_state = ?, hello_reason = ? WHERE id = 1", (state, reason))
