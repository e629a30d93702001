"""Reputation on the running node: evidence folded in, scores kept current, trust published.

Now and then the node turns what it observed (valid and invalid inputs:
containers pushed, fetched or gossiped, sync sessions completed; liveness)
into evidence, lets scores decay toward the prior, publishes signed
``trust`` containers for the peers whose score moved and who are worth
speaking of (``reputation.publishing``: known peers, strangers with enough
evidence, at most a few per round; gossiped like any container), and
refreshes the in-memory trust that GossipSub's application-specific score
reads (it is called synchronously, so it must not touch the database).
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

import trio

from meshnode.base.container import Container

from meshnode.base.errors import IdentityError, MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net.budget import BoundedLRU
from meshnode.net.peer_guard import save_standing_row
from meshnode.net.standing import PeerLimits, Standing
from meshnode.domain.reputation import gossip_app_score, publishing
from meshnode.records.reputation import records
from meshnode.records.reputation.reading import effective_trust
from meshnode.store.known import KnownAuthors
from meshnode.domain.sync.versions import DEFAULT_TRUST

log = logging.getLogger("meshnode.domain.reputation")


SESSION_CREDIT_MS = records.LIVENESS_PERIOD_MS  # a completed sync session counts once per peer per hour
SESSIONS_KEPT = PeerLimits().max_peers  # as many peers as standing remembers; the least recent forgotten first
APP_SCORES_KEPT = 4096  # app scores kept between trust refreshes (cleared when full)


async def _nobody() -> set[str]:
    return set()


class Reputation:
    """The reputation service. ``publish`` gossips a signed trust container (``Gossip.gossip``);
    ``coworkers`` are the peers this node works with on a goal (``MeshHooks.coworkers``)."""

    def __init__(self, store, key, standing: Standing, known: KnownAuthors, metrics, clock: Callable[[], int], *,
                 publish: Callable[[Container], Awaitable[None]],
                 coworkers: Callable[[], Awaitable[set[str]]] = _nobody, first_s: float = 10.0, every_s: float = 60.0,
                 policy: publishing.PublishPolicy = publishing.DEFAULT_POLICY):
        self.store, self.key, self.standing, self.known = store, key, standing, known
        self.metrics, self.clock, self.publish, self.coworkers = metrics, clock, publish, coworkers
        self.first_s, self.every_s = first_s, every_s
        self.trust_policy = policy  # which statements are signed, how many
        self._trust_now: dict[str, float] = {}
        self._app_scores: tuple[dict, dict] | None = None  # (the _trust_now they were read from, peer id -> score)
        self._sessions_credited: BoundedLRU[int] = BoundedLRU(SESSIONS_KEPT)  # DID -> when a session last counted

    def credit_sync_session(self, did: str) -> None:
        """A sync session completed with ``did`` is evidence of a well-behaved peer: the first
        one counts at once (a new peer has evidence within seconds), then one per hour, like
        liveness, so that merely being connected cannot lift an identity to the consensus floor."""
        now = self.clock()
        last = self._sessions_credited.get(did)
        if last is None or now - last >= SESSION_CREDIT_MS:
            self._sessions_credited.put(did, now)
            self.standing.record_valid(did, now)

    def app_score(self, peer_id) -> float:
        """GossipSub p6: a peer's trust as a score (``reputation.gossip_app_score``). GossipSub asks
        for every mesh peer on every publish and forward (issue 18: 3 % of an idle node with 12
        peers, mostly turning the peer id into a DID): answers are kept until the trust is
        refreshed (a new ``_trust_now``), for at most APP_SCORES_KEPT peers."""
        kept = self._app_scores
        if kept is None or kept[0] is not self._trust_now:
            kept = self._app_scores = (self._trust_now, {})
        score = kept[1].get(peer_id)
        if score is None:
            try:
                did = peer_id_to_did(peer_id.to_base58())
            except MeshnodeError:
                did = None
            score = 0.0 if did is None else gossip_app_score(self._trust_now.get(did, DEFAULT_TRUST))
            if len(kept[1]) >= APP_SCORES_KEPT:
                kept[1].clear()
            kept[1][peer_id] = score
        return score

    async def reputation_round(self) -> dict:
        """One pass of the reputation work; returns what it did."""
        now = self.clock()
        standing = {did: self.standing.summary(did) for did in self.standing.peers()}
        await self.store.write_background(lambda db: _save_standings(db, standing, now))
        expected = self.known.fixed | await self.coworkers()
        await self.store.write_background(lambda db: records.fold_observations(db, now_ms=now, expected=expected))
        await self.store.write_background(lambda db: records.refresh_decay(db, now_ms=now))
        known = self.known.snapshot()
        candidates = await self.store.read(lambda db: records.publish_candidates(db, now_ms=now, known=known))
        chosen = publishing.select(candidates, now, self.trust_policy)
        for reason, n in sorted(chosen.withheld.items()):
            self.metrics.inc("trust_statements_withheld", n, reason=reason)
        published = []
        for did in chosen.publish:
            c = await self.store.write_background(lambda db, did=did: records.publish_trust(db, self.key, did, now_ms=now))
            published.append(c.did)
            try:
                await self.publish(c)
            except Exception as exc:  # no peers yet: it still travels by sync and fetch
                log.debug("trust container not gossiped: %s", exc)
        self._trust_now = await self.store.read(lambda db: effective_trust(db, now_ms=now, me=self.key.did))
        self.metrics.inc("trust_published", len(published))
        return {"published": published, "withheld": chosen.withheld, "peers": len(self._trust_now)}

    async def run(self) -> None:
        """The trust known at start feeds gossip scoring at once; the first round runs
        ``reputation_first_s`` after start and the next ones at doubling intervals up to
        ``reputation_s``, so a new peer's first evidence is folded in within seconds, not a period."""
        try:
            self._trust_now = await self.store.read(lambda db: effective_trust(db, now_ms=self.clock(),
                                                                                me=self.key.did))
        except MeshnodeError as exc:
            log.warning("reading trust at start: %s", exc.reason)
        delay = self.first_s
        while True:
            await trio.sleep(delay)
            delay = min(delay * 2, self.every_s)
            try:
                await self.reputation_round()
            except MeshnodeError as exc:
                log.warning("reputation round: %s", exc.reason)


def _save_standings(db, standing: dict[str, dict], now: int) -> None:
    """The network layer's counters per peer, where fold_observations reads them."""
    for did, summary in standing.items():
        try:
            save_standing_row(db, did, summary, now)
        except IdentityError:  # not a did:key: nothing to credit
            continue
