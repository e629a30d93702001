"""Charging peers for the work they cause, and counting their invalid input (split from mesh.py).

Each input is charged before it is worked on (``CpuBudgets.admit``, by its
size) to its peer, its address and the address's subnet, then worked on in
the worker pool (``Offload``) and settled at its measured cost. A refusal is
typed (``Refused``: ``over_budget`` or ``busy``, with a retry hint in ms) and
counted by the caller under its own metric (``exchange_refused``,
``gossip_ignored``, ``sync_refused``). Known peers are charged on their own,
larger budget, and are exempt from the address limits (``AddressGuard``).
A stranger's input is also charged to the strangers' shared budget, and its
inbound streams count against the strangers' streams in all
(``strangers.StrangerGate``; ``begin_stream``).

Every service counts a peer's invalid input here (``invalid``): weighed by the
work and bytes it cost; past the threshold the peer is cut off (banned,
disconnected, its ban stored so that it outlives a restart). The ban is the
identity's only (``bans{kind=identity}``): its address may be a NAT with
honest peers behind it, and what many identities from one address cost is
bounded by the address's budget, not by a ban (an address is banned only for
handshake-level abuse, ``addresses.AddressGuard``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import trio

from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import did_to_peer_id, peer_id_to_did
from meshnode.net.addresses import AddressGuard
from meshnode.net.budget import BoundedLRU, CpuBudgets, OverBudget, estimate_ms, read_ms
from meshnode.net.inbound import remote_address
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.offload import Offload, OffloadBusy, count_items
from meshnode.net.standing import Standing, invalid_weight
from meshnode.net.strangers import StrangerGate
from meshnode.store.known import KnownAuthors
from meshnode.store.peers import save_standing, upsert_peer

log = logging.getLogger("meshnode.net")

BUSY_RETRY_MS = 1000  # the hint given with ``busy``: about one large job's time
STANDING_REFRESH_MS = 60_000  # an unchanged standing is stored again after this (its peer row's last_seen)


class Refused(MeshnodeError):
    """This peer's input is not worked on now: ``over_budget`` or ``busy``; try again after ``retry_ms``."""

    def __init__(self, code: str, reason: str, retry_ms: int):
        super().__init__(code, reason)
        self.retry_ms = retry_ms


class WorkFailed(Exception):
    """The work raised ``error`` after costing ``cost_ms`` (already charged)."""

    def __init__(self, error: Exception, cost_ms: float):
        super().__init__(str(error))
        self.error = error
        self.cost_ms = cost_ms


def remote_host(muxed_conn) -> str | None:
    """The remote IP of a connection, or None."""
    address = remote_address(muxed_conn)
    return address[0] if address else None


def standing_key(did: str | None, peer_id) -> str:
    """What a peer's standing is kept under: its DID, or ``peer:`` and its peer id when its key is not
    Ed25519 (such a peer has no DID, and can be cut off all the same)."""
    return did if did is not None else f"peer:{peer_id}"


def peer_id_object(did: str):
    from libp2p.peer.id import ID

    return ID.from_base58(did_to_peer_id(did))


class PeerGuard:
    def __init__(self, parts: Libp2pParts, standing: Standing, budgets: CpuBudgets, address_guard: AddressGuard,
                 offload: Offload, known: KnownAuthors, store, metrics, clock: Callable[[], int],
                 strangers: StrangerGate | None = None):
        self.parts, self.standing, self.budgets, self.address_guard = parts, standing, budgets, address_guard
        self.offload, self.known, self.store, self.metrics, self.clock = offload, known, store, metrics, clock
        self.strangers = strangers if strangers is not None else StrangerGate()
        self._saved: BoundedLRU[tuple[dict, int]] = BoundedLRU(standing.limits.max_peers)  # DID -> standing, when

    def is_known(self, did: str) -> bool:
        return did in self.known

    def banned(self, did: str | None) -> bool:
        return did is not None and self.standing.is_banned(did, self.clock())

    def host_of(self, did: str) -> str | None:
        """The remote IP of ``did``'s current connection, if any."""
        from libp2p.peer.id import ID

        return self.host_of_peer(ID.from_base58(did_to_peer_id(did)))

    def host_of_peer(self, peer_id) -> str | None:
        host = self.parts.host
        if host is None:
            return None
        for conn in host.get_network().get_connections(peer_id):
            remote = remote_host(conn.muxed_conn)
            if remote:
                return remote
        return None

    # --- work -------------------------------------------------------------------

    async def work(self, did: str, host: str | None, data: bytes, fn: Callable, *args, admit: bool = True,
                   inline_bytes: int | None = None) -> Any:
        """``fn(*args)`` on ``did``'s input ``data``: charged before (refused with ``Refused`` when over
        budget) by its size and item count, run off the loop unless small in both (``inline_bytes``:
        for work whose cost is in its items, not its bytes), settled at its cost.
        With ``admit`` False (answers to our own requests: we asked for that work) nothing is charged.
        An exception of ``fn`` comes out as WorkFailed (its cost charged)."""
        nbytes, items = len(data), count_items(data)
        charge = None
        if admit:
            estimate = estimate_ms(nbytes, nbytes if items is None else items)  # not counted: one a byte at most
            known = self.is_known(did)
            try:
                charge = self.budgets.admit(did, host, known, estimate, self.clock())
            except OverBudget as exc:
                kind = exc.key.split(':', 1)[0]
                self.metrics.inc("budget_refused", key=kind)  # which budget ran out: strangers = all of them
                raise Refused("over_budget", f"over its CPU budget ({kind}); retry in {exc.retry_ms} ms",
                              exc.retry_ms) from None
            if not known:
                self.strangers.touch(did, self.clock())
        try:
            result, cost = await self.offload.run(did, nbytes, fn, *args, items=items, inline_bytes=inline_bytes)
        except OffloadBusy as exc:
            if charge is not None:
                self.budgets.settle(charge, 0.0, self.clock())
            raise Refused("busy", exc.reason, BUSY_RETRY_MS) from None
        except Exception as exc:
            cost = getattr(exc, "cost_ms", 0.0)
            self._settle_cost(charge, cost)
            raise WorkFailed(exc, cost) from exc
        self._settle_cost(charge, cost)
        return result

    def admit_read(self, did: str, host: str | None, nbytes: int) -> None:
        """Charge receiving ``nbytes`` of ``did``'s (``budget.read_ms``) before they are read, or raise
        ``Refused`` (``over_budget``) when its budgets cannot pay: the frame is then not read."""
        try:
            self.budgets.admit(did, host, self.is_known(did), read_ms(nbytes), self.clock())
        except OverBudget as exc:
            kind = exc.key.split(':', 1)[0]
            self.metrics.inc("budget_refused", key=kind)
            raise Refused("over_budget", f"over its CPU budget ({kind}); retry in {exc.retry_ms} ms",
                          exc.retry_ms) from None

    def begin_stream(self, did: str, host: str | None) -> str | None:
        """Count one inbound exchange or sync stream of ``did`` at ``host`` (None for a known peer: not
        counted), or say why not: ``address_busy`` (its address's streams) or ``strangers_busy`` (all
        strangers' streams). A stream counted is ended with ``end_stream``."""
        if host is None and self.is_known(did):
            return None
        now = self.clock()
        if host is not None and not self.address_guard.begin_stream(host, now):
            return "address_busy"
        if not self.strangers.begin_stream(did):
            if host is not None:
                self.address_guard.end_stream(host)
            return "strangers_busy"
        return None

    def end_stream(self, did: str, host: str | None) -> None:
        if host is not None:
            self.address_guard.end_stream(host)
        self.strangers.end_stream(did)

    def _settle_cost(self, charge, cost: float) -> None:
        if charge is not None:
            self.budgets.settle(charge, cost, self.clock())
        self.metrics.inc("work_us", int(cost * 1000))  # integer counters: most jobs take under a ms

    # --- invalid input ------------------------------------------------------------

    def slow_frame(self, did: str) -> None:
        """A frame came slower than the paced read allows: invalid input from an unknown peer (slow-loris);
        from a known peer, a slow link (counted, not held against it; the stream is reset all the same)."""
        if self.is_known(did):
            self.metrics.inc("slow_frame_from_known_peer")
        else:
            self.invalid(did, "slow_frame")

    def invalid(self, did: str, code: str, cost_ms: float = 0.0, nbytes: int = 0, weight: float = 1.0) -> None:
        """Count one invalid input from ``did``, weighed by the work and bytes it cost (at least
        ``weight``); past the threshold, cut the peer off: the identity is banned, not its address."""
        self._invalid(did, code, max(weight, invalid_weight(cost_ms, nbytes)), lambda: peer_id_object(did), keep=True)

    def invalid_from_peer_id(self, peer_id, code: str, cost_ms: float = 0.0, nbytes: int = 0) -> None:
        """``invalid`` for a gossip forwarder or author known by its peer id. A peer whose key is not
        Ed25519 names no DID: its standing is kept under ``standing_key`` (this run only: the peers
        table holds DIDs), and past the threshold it is cut off and refused at connect all the same."""
        try:
            did = peer_id_to_did(peer_id.to_base58())
        except MeshnodeError:
            self._invalid(standing_key(None, peer_id), code, invalid_weight(cost_ms, nbytes), lambda: peer_id,
                          keep=False)
            return
        self.invalid(did, code, cost_ms=cost_ms, nbytes=nbytes)

    def _invalid(self, key: str, code: str, weight: float, peer_id: Callable, keep: bool) -> None:
        """One invalid input held against ``key`` (``standing_key``); at the threshold the ban, kept in
        the store when ``keep`` (a DID), and the peer (``peer_id()``) disconnected."""
        self.metrics.inc("invalid_from_peer", code=code)
        if self.standing.record_invalid(key, code, self.clock(), weight):
            log.warning("cutting off %s after %d invalid inputs", key, self.standing.summary(key)["invalid"])
            self.metrics.inc("peers_cut_off")
            self.metrics.inc("bans", kind="identity")
            if keep:
                trio.lowlevel.spawn_system_task(self._keep_ban, key)
            if self.parts.host is not None:
                trio.lowlevel.spawn_system_task(self.disconnect, peer_id())

    async def disconnect(self, pid) -> None:
        try:
            await self.parts.host.disconnect(pid)
        except Exception as exc:
            log.debug("disconnect %s: %s", pid, exc)

    async def _keep_ban(self, did: str) -> None:
        """Record a ban at once, so that it outlives a restart of this node."""
        try:
            await self.save_standing(did)
        except Exception as exc:  # a background task must never take the node down (closing store)
            log.warning("could not record the ban of %s: %s: %s", did, type(exc).__name__, exc)

    async def save_standing(self, did: str) -> None:
        """Store ``did``'s standing (after each of its exchange requests, and at a ban), unless it is
        what was stored less than ``STANDING_REFRESH_MS`` ago: a stranger refused request after
        request (busy, early pushes) changes nothing, and each write is a trip to the store's thread."""
        summary, now = self.standing.summary(did), self.clock()
        last = self._saved.peek(did)
        if last is not None and last[0] == summary and now - last[1] < STANDING_REFRESH_MS:
            return
        await self.store.write(save_standing_row, did, summary, now)
        self._saved.put(did, (summary, now), now)


def save_standing_row(db, did: str, summary: dict, now: int) -> None:
    upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=now, source="exchange")
    save_standing(db, did, summary, now)
