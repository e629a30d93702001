"""MeshConsensus on the mesh: the committee's messages over gossip, the core's timers on trio.

The pure core (``consensus.tendermint.Core``) decides; this driver feeds it
verified messages from the topic ``/meshnode/consensus/1``, runs its timers,
publishes what it says, and stores decisions with their signed precommits.
Resent messages carry a counter beside the message so that gossip, which
drops content it has seen, still delivers them: a gossip payload is the
deterministic CBOR array ``[message bytes, resend counter]``.
"""

from __future__ import annotations

import heapq
import logging

import trio

from meshnode.consensus import messages as cm
from meshnode.consensus.committee import Committee
from meshnode.consensus.tendermint import (Broadcast, Core, Decide, Emergency, Evidence, Revisit, Schedule,
                                           Timeouts)
from meshnode.container import cbor
from meshnode.errors import MeshnodeError
from meshnode.reputation import Evidence as Observed
from meshnode.reputation import records
from meshnode.store import decisions

log = logging.getLogger("meshnode.consensus")

CONSENSUS_TOPIC = "/meshnode/consensus/1"


class ConsensusMixin:
    core: Core | None = None

    def consensus_status(self) -> dict:
        if self.core is None:
            return {"enabled": False, "reason": "no committee configured ([consensus] committee)"}
        h = self.core.h
        last = self.core.decided.get(h.number - 1)
        return {"enabled": True, "committee": self.core.committee.id, "validators": len(self.core.committee.members),
                "validator": self.core.is_validator, "height": h.number, "round": h.round, "step": h.step,
                "pending": len(self.core.pending), "emergency": h.emergency is not None,
                "last_signers": sorted(p.sender for p in last.precommits) if last else []}

    async def consensus_submit(self, value: bytes) -> dict:
        if self.core is None:
            raise MeshnodeError("no_committee", "this node has no committee: set [consensus] committee")
        await self._consensus_apply(self.core.submit(value, self._consensus_now()))
        return {"height": self.core.height, "value_id": cm.value_id(value).hex()}

    # --- the driver ---------------------------------------------------------------------

    def _consensus_now(self) -> int:
        return int(trio.current_time() * 1000)

    async def _run_consensus(self, subscription, committee: Committee, timeouts: Timeouts) -> None:
        start = await self.store.read(decisions.next_height, committee.id)
        decided = await self.store.read(decisions.decided_value_ids, committee.id)
        self.core = Core(self.key, committee, timeouts=timeouts, height=start, decided_ids=decided)
        self._timers: list[tuple[int, int, Schedule]] = []
        self._timer_seq = 0
        self._timers_changed = trio.Event()
        self._resends = 0
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._consensus_reader, subscription)
            nursery.start_soon(self._consensus_timers)

    async def _consensus_reader(self, subscription) -> None:
        while True:
            message = await subscription.get()
            try:
                payload, _ = cbor.decode(message.data, max_bytes=cm.MAX_MESSAGE + 64, max_depth=2)
                if type(payload) is not list or len(payload) != 2 or type(payload[0]) is not bytes:
                    raise cm.MessageError("bad_message", "a consensus gossip payload is [message, counter]")
                msg = cm.decode(payload[0])
            except MeshnodeError as exc:
                self.metrics.inc("consensus_rejected", code=exc.code)
                continue
            if msg.sender == self.key.did:
                continue
            self.metrics.inc("consensus_received", kind=msg.kind)
            await self._consensus_apply(self.core.receive(msg, self._consensus_now()))

    async def _consensus_timers(self) -> None:
        while True:
            deadline = self._timers[0][0] / 1000 if self._timers else float("inf")
            with trio.move_on_at(deadline):
                await self._timers_changed.wait()
            self._timers_changed = trio.Event()
            now = self._consensus_now()
            while self._timers and self._timers[0][0] <= now:
                _, _, s = heapq.heappop(self._timers)
                await self._consensus_apply(self.core.timeout(s.step, s.height, s.round, now))

    async def _consensus_apply(self, actions: list) -> None:
        for a in actions:
            if isinstance(a, Broadcast):
                await self._consensus_publish(a.message)
            elif isinstance(a, Schedule):
                self._timer_seq += 1
                heapq.heappush(self._timers, (a.at_ms, self._timer_seq, a))
                self._timers_changed.set()
            elif isinstance(a, Decide):
                await self.store.write(decisions.save_decision, self.core.committee.id, a.height, a.value, a.round,
                                       [p.encode() for p in a.precommits], self.clock())
                self.metrics.inc("consensus_decisions")
                await self._credit_precommitters(a)
                log.info("decided height %d in round %d", a.height, a.round)
            elif isinstance(a, Emergency):
                await self.store.write(decisions.save_emergency, self.core.committee.id, a.height, a.value,
                                       self.clock())
                self.metrics.inc("consensus_emergencies")
                log.warning("no quorum for height %d: provisional emergency_consensus decision", a.height)
            elif isinstance(a, Revisit):
                await self.store.write(decisions.revisit, self.core.committee.id, a.height, a.confirmed)
            elif isinstance(a, Evidence):
                await self._equivocation(a)

    async def _consensus_publish(self, msg: cm.Message) -> None:
        self._resends += 1  # a counter per publish: gossip never takes a resend for a duplicate
        data = cbor.encode([msg.encode(), self._resends])
        try:
            await self.pubsub.publish(CONSENSUS_TOPIC, data)
            self.metrics.inc("consensus_sent", kind=msg.kind)
        except Exception as exc:  # no peers yet, or shutting down: the core resends
            log.debug("consensus message not sent: %s", exc)

    async def _credit_precommitters(self, decision: Decide) -> None:
        """Validators whose signed precommit made a decision earn consensus conduct evidence
        (once per decision: the reference is the height's commit)."""
        ref = f"commit:{self.core.committee.id}:{decision.height}"
        for p in decision.precommits:
            if p.sender != self.key.did:
                ev = Observed("consensus_ok", self.clock(), ref=ref)
                await self.store.write(lambda db, did=p.sender: records.record_evidence(db, did, [ev],
                                                                                         now_ms=self.clock()))

    async def _equivocation(self, evidence: Evidence) -> None:
        """Two conflicting signed votes: kept as a container anyone can check, and counted."""
        from meshnode.container import build_container

        c = build_container(self.key, "equivocation_evidence",
                            {"validator": evidence.first.sender, "first": evidence.first.encode(),
                             "second": evidence.second.encode()}, timestamp_ms=self.clock())
        await self.store.write(lambda db: db.put_container(c, received_at_ms=self.clock()))
        await self.store.write(lambda db: records.record_equivocation(db, evidence.first.sender, c.did,
                                                                      now_ms=self.clock()))
        self.metrics.inc("consensus_equivocations")
        log.warning("validator %s equivocated: evidence %s", evidence.first.sender, c.did)
