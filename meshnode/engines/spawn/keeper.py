"""A parent keeps in touch with its children: it dials every active child it is not connected to,
and writes down when it last heard each.

A child dials its parent through its ``bootstrap.txt``, which names the parent's addresses as they
were at the spawn. When the parent moves (a restart on another port, a new address), the children
cannot find it, and the parent would hear nothing from them: their liveness would fall to dead and
the reactor escalate children that are running fine. The parent knows where each child listens
(the ``children`` row), so it dials them itself, every ``period_s``, quietly: a stopped child is
the liveness tracker's business, not a warning here.
"""

from __future__ import annotations

import json
import logging

import trio

from meshnode.base.identity.did import did_to_peer_id
from meshnode.net.errors import NetError
from meshnode.records import family
from meshnode.store.peers import set_liveness
from meshnode.store.database import Database

log = logging.getLogger("meshnode.engines.spawn")


def dialable_children(db: Database) -> list[tuple[str, list[str]]]:
    """(DID, addresses) of every active child with an address that names a host and a port."""
    out = []
    for row in family.child_rows(db, "WHERE c.state = 'active'"):
        usable = [a for a in json.loads(row["addresses"] or "[]") if _dialable(a)]
        if usable:
            out.append((row["did"], usable))
    return out


def _dialable(address: str) -> bool:
    return (isinstance(address, str) and "/tcp/" in address and not address.endswith("/tcp/0")
            and not address.startswith(("/ip4/0.0.0.0/", "/ip6/::/")))


class FamilyKeeper:
    def __init__(self, store, mesh, metrics, period_s: float):
        self.store, self.mesh, self.metrics, self.period_s = store, mesh, metrics, period_s
        self._noted: dict[str, int] = {}  # child DID -> the last heard time written

    async def _note_heard(self) -> None:
        """Write each child's last heard time as the tracker knows it. The liveness row changes only
        with the state, so a child heard for hours after its last change would, once this node
        stopped, look silent since that change (``family.aged``); with this, at most one period."""
        tracker = self.mesh.liveness
        for did in await self.store.read(family.active_children):
            heard, state = tracker.last_heard_ms(did), tracker.state(did)
            if heard is not None and state is not None and heard > self._noted.get(did, 0):
                await self.store.write(set_liveness, did, state=state.value, last_heard_ms=heard, last_seq=-1,
                                       now_ms=heard)
                self._noted[did] = heard

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self.round()
            await trio.sleep(self.period_s)  # the period between rounds, not a synchronization

    async def round(self) -> int:
        """Note when each child was last heard; dial the active ones not connected now; how many answered."""
        await self._note_heard()
        connected = {p.to_base58() for p in self.mesh.host.get_connected_peers()} if self.mesh.host else set()
        reached = 0
        for did, addresses in await self.store.read(dialable_children):
            if did_to_peer_id(did) in connected:
                continue
            try:
                await self.mesh.dial(did, addresses)
            except NetError as exc:
                self.metrics.inc("family_dial_failed")
                log.debug("child %s not reached at %s: %s", did, addresses, exc.reason)
                continue
            reached += 1
            self.metrics.inc("family_dialed")
        return reached
