"""Admission of strangers' containers and upkeep of what strangers grow.

Known authors (``store.known``) pass untouched. Containers of unknown authors
are stored within quotas (``store.quotas``: per author, the strangers' pool
for those no known author or peer vouches for, and a global one), at one
write rate for all strangers whichever way they come, and their gossip is
relayed only within a rate (``net.author_rate``); no refusal is held against
the peer that relayed them. A container a known peer sends (push, sync,
fetch) or forwards (gossip) is vouched for: not in the pool, not limited by
the strangers' write rate. Every maintenance round the known set is read again, and
what identities that come and go leave behind is trimmed: peer rows of
strangers beyond ``[limits] unknown_peers`` (``store.stranger_peers``) and the
services' own per-identity memory.
"""

from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass
from typing import Callable

import trio

from meshnode.base.container import Container
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp.rules import GmpRefused, is_gmp
from meshnode.net.author_rate import AuthorRate, RateSettings, StrangerWrites
from meshnode.net.events import MeshHooks, PeerEvents
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.not_wanted import NotWanted
from meshnode.net.peer_guard import PeerGuard
from meshnode.base.container.schema import HELLO_CLASS, INVITATION_CLASS
from meshnode.store.admit_batch import admit_many
from meshnode.store.known import KnownAuthors, known_authors
from meshnode.store.quotas import Admission, Quotas, admit
from meshnode.store.stranger_peers import prune_unknown_peers

log = logging.getLogger("meshnode.net")

REFUSED_BEFORE = "refused_before"  # refused or evicted earlier (net.not_wanted): not taken again
POINT_TO_POINT = "point_to_point"  # a spawn_hello or spawn_invitation: never stored, whichever way it came
STRANGER_RATE = "stranger_rate"  # over the write rate of unknown authors' containers (net.author_rate)
PARDONS_KEPT = 4096  # ids of gossip refused by rate, kept so that copies are not counted as invalid
FORWARDS_KEPT = 4096  # containers a known peer forwarded by gossip, until the reader stores them (seconds)
# After a burst of arrivals the SQLite page caches are emptied and the freed heap handed back to the
# system: after a flood of 5000 junk containers, Python's own objects were back within 1 MB of their
# baseline (tracemalloc) while the process still held 5-6 MB more; gc.collect() returned nothing,
# the page caches (up to 2 MB per connection) plus glibc's malloc_trim about 3 MB of it.
TRIM_AFTER_ARRIVALS = 256  # containers from the network since the last trim
TRIM_CHECK_S = 5.0


@dataclass(frozen=True)
class GmpRefusal(Admission):
    """A GMP container refused at admission (step 8, ``gmp.rules.GmpRefused``): invalid input of
    the peer that sent it. ``reason`` is the gmp_* code, ``detail`` the readable reason."""
    detail: str = ""


class AdmissionService:
    """The admission service: every container from the network is stored through it (push, sync,
    fetch, gossip), and its upkeep (``run``) is the mesh's maintenance round for strangers."""

    def __init__(self, store, key, known: KnownAuthors, guard: PeerGuard, parts: Libp2pParts, hooks: MeshHooks,
                 events: PeerEvents, metrics, clock: Callable[[], int], *, quotas: Quotas, known_min_trust: float,
                 max_unknown_peers: int, rate: RateSettings, upkeep_s: float):
        self.store, self.key, self.known, self.guard, self.parts = store, key, known, guard, parts
        self.hooks, self.events, self.metrics, self.clock = hooks, events, metrics, clock
        self.quotas, self.known_min_trust, self.max_unknown_peers = quotas, known_min_trust, max_unknown_peers
        self.upkeep_s = upkeep_s
        # unknown authors' containers no known peer sent, stored per second: push, sync, fetch and gossip
        self.stranger_writes = StrangerWrites(rate.stranger_writes_per_second, rate.stranger_writes_burst)
        self.author_rate = AuthorRate(rate, shared=self.stranger_writes)
        self._forwarded: dict[str, None] = {}  # containers a known peer forwarded by gossip: vouched for
        self.not_wanted = NotWanted()  # containers the quotas refused or evicted: not fetched or taken again
        self._pardoned: dict[bytes, None] = {}  # gossip ids refused by rate: copies are not invalid input
        self._arrivals_since_trim = 0  # containers stored, refused or evicted since the heap was trimmed

    def stranger_room(self, now_ms: int) -> tuple[int, int]:
        """How many containers a stranger's push may have decoded now (the strangers' write rate's
        room: a container of an unknown author it sends needs a token), and the ms until one more
        fits. A known author's container a stranger pushes waits with the rest: which author wrote
        an item is known only once it is decoded."""
        return self.stranger_writes.room(now_ms), self.stranger_writes.wait_ms(now_ms)

    async def store_from_peer(self, c: Container, received_from: str | None, via: str) -> Admission:
        """Store a verified container from the network within the quotas; counts refusals and evictions.
        A container the store fails on is logged and counted (``containers_not_stored``), outcome
        "failed": one container must not take down the gossip reader or the session storing it."""
        refused = self._refused_before_store(c, received_from, via)
        if refused is not None:
            return refused
        try:
            result = await self.store.write(admit, c, received_at_ms=self.clock(), received_from=received_from,
                                            quotas=self.quotas, known=self.known.snapshot(),
                                            vouched=c.did in self._forwarded)
        except Exception as exc:
            return self._admission_failed(c, received_from, via, exc)
        return self._admitted(c, received_from, via, result)

    async def store_many_from_peers(self, items: list[tuple[Container, str | None]], via: str) -> list[Admission]:
        """``_store_from_peer`` for several containers in one write transaction (``store.admit_batch``:
        one commit, one hop to the writer thread); in order, each one's Admission. When the batch
        itself fails (not one container of it), each is stored on its own."""
        results: list[Admission | None] = [self._refused_before_store(c, sent_by, via) for c, sent_by in items]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            now = self.clock()
            vouched = [items[i][0].did for i in todo if items[i][0].did in self._forwarded]
            try:
                outcomes = await self.store.write(admit_many, [(items[i][0], now, items[i][1]) for i in todo],
                                                  quotas=self.quotas, known=self.known.snapshot(), vouched=vouched)
            except Exception as exc:  # the transaction as a whole: one at a time, each failure its own
                log.info("a batch of %d containers not stored together (%s): one at a time", len(todo), exc)
                outcomes = [None] * len(todo)
            for i, outcome in zip(todo, outcomes):
                c, received_from = items[i]
                if outcome is None:
                    results[i] = await self.store_from_peer(c, received_from, via)
                elif isinstance(outcome, Exception):
                    results[i] = self._admission_failed(c, received_from, via, outcome)
                else:
                    results[i] = self._admitted(c, received_from, via, outcome)
        return results

    def _admission_failed(self, c: Container, received_from: str | None, via: str, exc: Exception) -> Admission:
        if isinstance(exc, GmpRefused):
            return self._gmp_refused(c, received_from, via, exc)
        return self._not_stored(c, received_from, via, exc)

    def _admitted(self, c: Container, received_from: str | None, via: str, result: Admission) -> Admission:
        """What follows a store's answer: refusals and evictions counted and remembered, GMP told,
        the reactor poked for a new note or GMP container."""
        self._forwarded.pop(c.did, None)  # the store has its vouch now
        if result.outcome == "refused":
            self.metrics.inc("containers_refused", reason=result.reason, via=via)
            self.not_wanted.add(c.did, c.sender_did)
        for did, author in result.gone:
            self.not_wanted.add(did, author)
        if result.pool_evicted:
            self.metrics.inc("containers_evicted", result.pool_evicted, reason="pool")
        if result.evicted > result.pool_evicted:
            self.metrics.inc("containers_evicted", result.evicted - result.pool_evicted, reason="global_quota")
        if result.pooled:
            self.metrics.inc("pool_admitted", via=via)
        if result.unpooled:
            self.metrics.inc("pool_vouched", result.unpooled)
        self._arrivals_since_trim += 1 + result.evicted
        if is_gmp(c) and (result.outcome in ("new", "pending") or  # admitted, or held aside; or pushed
                          (result.outcome == "duplicate" and via == "push" and received_from == c.sender_did)):
            self.hooks.gmp_arrived(c.did, received_from)  # again by its author, who may lack this node's receipt
        if result.outcome == "new" and (c.cls == "note" or is_gmp(c)):
            self.hooks.stored(c)
        return result

    def _gmp_refused(self, c: Container, received_from: str | None, via: str, exc: GmpRefused) -> Admission:
        """Refused by GMP admission: counted, not taken again, and invalid input of the sender
        (an honest relay forwards only what it admitted itself)."""
        self.metrics.inc("containers_refused", reason=exc.code, via=via)
        self.not_wanted.add(c.did, c.sender_did)
        log.info("GMP container %s from %s (%s) refused: %s: %s", c.did, received_from, via, exc.code, exc.reason)
        if received_from is not None and via != "gossip" and received_from != self.key.did:
            self.guard.invalid(received_from, exc.code)
        return GmpRefusal("invalid", reason=exc.code, detail=exc.reason)

    def _not_stored(self, c: Container, received_from: str | None, via: str, exc: Exception) -> Admission:
        reason = exc.code if isinstance(exc, MeshnodeError) else type(exc).__name__
        log.warning("container %s from %s (%s) not stored: %s: %s", c.did, received_from, via, reason, exc)
        self.metrics.inc("containers_not_stored", reason=reason, via=via)
        return Admission("failed", reason=reason)

    def admit_gossip_author(self, c: Container, message=None, forwarder: str | None = None) -> bool:
        """Whether gossip carrying ``c`` may be relayed (and stored): always for a known author or
        when a known peer (``forwarder``, its DID) forwarded it (it is then vouched for: stored
        out of the strangers' pool), within the unknown-author rates for anyone else. A refusal
        is counted, not charged to the forwarder; pubsub caches it as a failed validation, so
        the message's id (from ``message``) is pardoned: later copies from other forwarders are
        not charged either."""
        if c.sender_did in self.known:
            return True
        if forwarder is not None and forwarder in self.known:
            self._forwarded[c.did] = None
            while len(self._forwarded) > FORWARDS_KEPT:
                del self._forwarded[next(iter(self._forwarded))]
            return True
        ok, why = self.author_rate.allow(c.sender_did, self.clock(), copy_of=c.did)
        if ok:
            return True
        self._ignore_gossip(message, _GOSSIP_REFUSALS[why])
        return False

    def ignore_strangers_gossip(self, message, forwarder: str, publisher: str | None) -> bool:
        """Whether gossip is ignored before its container is decoded: neither its ``forwarder`` nor
        its ``publisher`` (the message's origin, both DIDs) is known and the strangers' write rate
        has no room, so that an unknown author's container would be ignored once decoded (a known
        author's published by a stranger waits for sync). Counted and pardoned as
        ``admit_gossip_author``'s refusals."""
        if forwarder in self.known or (publisher is not None and publisher in self.known) or \
                self.stranger_writes.room(self.clock()) >= 1:
            return False
        self._ignore_gossip(message, STRANGER_RATE)
        return True

    def _ignore_gossip(self, message, reason: str) -> None:
        self.metrics.inc("gossip_ignored", reason=reason)
        if message is not None and self.parts.pubsub is not None:
            self._pardoned[self.parts.pubsub._msg_id_constructor(message)] = None
            while len(self._pardoned) > PARDONS_KEPT:
                del self._pardoned[next(iter(self._pardoned))]

    def gossip_pardoned(self, msg_id: bytes) -> bool:
        return msg_id in self._pardoned

    async def refresh_known(self) -> None:
        """Read the known authors from the store again (at start, each round, when friends change,
        after GMP work that may change whom this node works with)."""
        fixed = self.known.fixed
        known = await self.store.read(known_authors, fixed=fixed, min_trust=self.known_min_trust)
        known |= await self.hooks.coworkers()  # peers this node chose to work with on a goal (net.mesh_gmp)
        self.known.replace(known)
        self.not_wanted.forget_authors(self.known.snapshot())

    async def run(self) -> None:
        """Each maintenance round: known authors again, stranger rows and memory trimmed;
        once a burst of arrivals is over (none for TRIM_CHECK_S): freed memory handed back."""
        while True:
            await self._admission_round()
            with trio.move_on_after(self.upkeep_s):
                while True:
                    seen = self._arrivals_since_trim
                    await trio.sleep(TRIM_CHECK_S)
                    if seen == self._arrivals_since_trim >= TRIM_AFTER_ARRIVALS:  # a burst, now over
                        self._arrivals_since_trim = 0
                        await self._release_memory()

    async def _release_memory(self) -> None:
        try:
            await self.store.write_background(lambda db: db.shrink_memory())
            await self.store.read(lambda db: db.shrink_memory())
        except Exception as exc:  # a busy store: the caches are freed next time
            log.debug("page caches not freed: %s", exc)
        await trio.to_thread.run_sync(release_freed_memory)
        self.metrics.inc("memory_trims")

    async def _admission_round(self) -> None:
        try:
            await self.refresh_known()
            pruned = await self.store.write_background(
                prune_unknown_peers, keep=self.max_unknown_peers, known=self.known.snapshot(),
                now_ms=self.clock(), min_trust=self.known_min_trust)
            if pruned:
                self.metrics.inc("peers_pruned", pruned)
        except Exception as exc:  # a busy store: the next round tries again
            log.info("admission upkeep: %s: %s", type(exc).__name__, exc)
        self._forget_strangers()

    def _forget_strangers(self) -> None:
        """Drop per-identity memory that a stranger left and that would be rebuilt if it came back
        (each service forgets its own: ``PeerEvents.on_upkeep``)."""
        now = self.clock()
        self.events.upkeep(now, self.parts.connected_dids())
        self.author_rate.sweep(now)

    def _refused_before_store(self, c: Container, received_from: str | None, via: str) -> Admission | None:
        """The refusals decided before the store is asked (counted), or None."""
        if c.cls in (HELLO_CLASS, INVITATION_CLASS):  # point to point (spawn.md 8): a hello goes to _serve_push's
            # hook, an invitation travels in a bundle and inside a hello only
            self.metrics.inc("containers_refused", reason=POINT_TO_POINT, via=via)
            return Admission("refused", reason=POINT_TO_POINT)
        if c.did in self.not_wanted and c.sender_did not in self.known:  # refused or evicted before
            self.metrics.inc("containers_refused", reason=REFUSED_BEFORE, via=via)
            return Admission("refused", reason=REFUSED_BEFORE)
        if via != "gossip" and c.sender_did not in self.known and received_from not in self.known \
                and not self.stranger_writes.take(self.clock()):  # gossip took it in admit_gossip_author
            self.metrics.inc("containers_refused", reason=STRANGER_RATE, via=via)
            return Admission("busy", reason=STRANGER_RATE)  # for now: not remembered, comes again later
        return None


_GOSSIP_REFUSALS = {"author_rate": "unknown_author_rate", "total_rate": "unknown_total_rate",
                    "stranger_rate": STRANGER_RATE}  # AuthorRate's reason -> gossip_ignored{reason}


def release_freed_memory() -> None:
    """Hand heap pages freed after a burst back to the system (glibc keeps them otherwise)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
