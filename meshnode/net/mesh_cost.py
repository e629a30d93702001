"""Charging peers for the work they cause, as the Mesh runs it (split from mesh.py).

Each input is charged before it is worked on (``CpuBudgets.admit``, by its
size) to its peer, its address and the address's subnet, then worked on in
the worker pool (``Offload``) and settled at its measured cost. A refusal is
typed (``Refused``: ``over_budget`` or ``busy``, with a retry hint in ms) and
counted by the caller under its own metric (``exchange_refused``,
``gossip_ignored``, ``sync_refused``). Known peers are charged on their own,
larger budget, and are exempt from the address limits (``AddressGuard``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from meshnode.errors import MeshnodeError
from meshnode.identity.did import did_to_peer_id
from meshnode.net.budget import OverBudget, estimate_ms
from meshnode.net.inbound import remote_address
from meshnode.net.offload import OffloadBusy, count_items

log = logging.getLogger("meshnode.net")

BUSY_RETRY_MS = 1000  # the hint given with ``busy``: about one large job's time


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


class CostMixin:
    known: set[str]

    def _is_known(self, did: str) -> bool:
        return did in self.known

    def _host_of(self, did: str) -> str | None:
        """The remote IP of ``did``'s current connection, if any."""
        from libp2p.peer.id import ID

        return self._host_of_peer(ID.from_base58(did_to_peer_id(did)))

    def _host_of_peer(self, peer_id) -> str | None:
        if self.host is None:
            return None
        for conn in self.host.get_network().get_connections(peer_id):
            host = remote_host(conn.muxed_conn)
            if host:
                return host
        return None

    async def _work(self, did: str, host: str | None, data: bytes, fn: Callable, *args,
                    admit: bool = True) -> Any:
        """``fn(*args)`` on ``did``'s input ``data``: charged before (refused with ``Refused`` when over
        budget) by its size and item count, run off the loop unless small in both, settled at its cost.
        With ``admit`` False (answers to our own requests: we asked for that work) nothing is charged.
        An exception of ``fn`` comes out as WorkFailed (its cost charged)."""
        nbytes, items = len(data), count_items(data)
        charge = None
        if admit:
            estimate = estimate_ms(nbytes, nbytes if items is None else items)  # not counted: one a byte at most
            try:
                charge = self.budgets.admit(did, host, self._is_known(did), estimate, self.clock())
            except OverBudget as exc:
                raise Refused("over_budget", f"over its CPU budget ({exc.key.split(':', 1)[0]});"
                              f" retry in {exc.retry_ms} ms", exc.retry_ms) from None
        try:
            result, cost = await self.offload.run(did, nbytes, fn, *args, items=items)
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

    def _settle_cost(self, charge, cost: float) -> None:
        if charge is not None:
            self.budgets.settle(charge, cost, self.clock())
        self.metrics.inc("work_us", int(cost * 1000))  # integer counters: most jobs take under a ms

    def _slow_frame(self, did: str) -> None:
        """A frame came slower than the paced read allows: invalid input from an unknown peer (slow-loris);
        from a known peer, a slow link (counted, not held against it; the stream is reset all the same)."""
        if self._is_known(did):
            self.metrics.inc("slow_frame_from_known_peer")
        else:
            self._invalid(did, "slow_frame")

    def _address_cut_off(self, did: str) -> None:
        """One more identity at ``did``'s address was cut off: the address may be refused next."""
        host = self._host_of(did)
        if host and not self._is_known(did) and self.address_guard.cut_off(host, self.clock()):
            log.warning("refusing connections from %s for a while: %d identities there were cut off",
                        host, self.address_guard.limits.cutoffs_to_ban)
            self.metrics.inc("addresses_cut_off")
