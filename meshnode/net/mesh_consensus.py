"""MeshConsensus on the mesh: the committee's messages over gossip, the core's timers on trio.

The pure core (``consensus.tendermint.Core``) decides a block of values per
height; this driver feeds it verified messages from the topic
``/meshnode/consensus/3``, runs its timers, publishes what it says, and stores
each decided value (with its height and index in the block) and the height's
signed precommits, in one transaction per block.
The messages of one core step travel together in one gossip message, with a
counter so that gossip, which drops content it has seen, still delivers a
resend (``consensus_gossip``).

Catching up: whenever a peer joins this node's gossip mesh for the topic (this
node starting or restarting, a peer coming back, a partition healing), the
driver lets the core ask for the commits it may have missed (``Core.join``);
the core answers others' requests from the commits it keeps, which after a
restart are loaded from the store.
"""

from __future__ import annotations

import heapq
import logging
import secrets
from typing import Callable

import trio

from meshnode.domain.consensus import epochs
from meshnode.domain.consensus import messages as cm
from meshnode.domain.consensus import proofs
from meshnode.domain.consensus.committee import Committee
from meshnode.domain.gmp import contest
from meshnode.domain.consensus.tendermint import (EMERGENCY, KEPT_COMMITS, BlockLimits, Broadcast, Core, Decide,
                                                 Emergency, Evidence, NoQuorum, Revisit, Schedule, Timeouts)
from meshnode.base.errors import MeshnodeError
from meshnode.net import consensus_gossip as gossip
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.peer_guard import PeerGuard
from meshnode.domain.reputation import Evidence as Observed
from meshnode.records.gmp import delegate
from meshnode.records.reputation import records
from meshnode.store import decisions

# What a peer is charged for when one of its consensus messages is refused: bytes that no honest node
# sends. Not a non-member's vote (a node still on an older committee sends those) nor a stale height.
CHARGED = frozenset({"bad_message", "bad_signature", "bad_block"})

log = logging.getLogger("meshnode.domain.consensus")

CONSENSUS_TOPIC = "/meshnode/consensus/3"  # 3: one gossip message carries a step's messages (protocols/consensus.md)
JOIN_POLL_S = 0.5  # how often the driver looks for peers new in the topic's gossip mesh
MAX_WAIT_S = 50.0  # a proposer waits at most this long for its value's decision (the control call allows 60)
WRITE_QUEUE = 16  # store jobs queued for the writer (a few heights: a Decide and its Revisit or Emergency each)
DRAIN_S = 5.0  # on shutdown, how long the writer may go on storing what was decided (acknowledged) already


def _switches_epoch(a) -> bool:
    return isinstance(a, Decide) and any(map(epochs.parse_committee_value, a.values))


def _order(a) -> int:
    """A decision that switches the epoch first (the old core's next-height proposal and votes
    are then not published under the old committee); then messages and timers (the next
    height's proposal and votes do not wait for the store); then what is stored."""
    return 0 if _switches_epoch(a) else 1 if isinstance(a, (Broadcast, Schedule)) else 2


def _proven(core: Core, msg: cm.Message) -> bool:
    """Whether a commit message carries a quorum of ``core``'s committee's precommits for its block
    (what the core checks again before it takes it)."""
    try:
        proofs.commit_precommits(core.committee, msg.height, msg.round, msg.value_id, msg.commit)
    except MeshnodeError:
        return False
    return True


class Consensus:
    """The consensus service: ``run`` with the topic's subscription once the host runs (only on a
    node with a committee); ``validate_gossip`` is the topic's validator (set by ``register``)."""

    def __init__(self, parts: Libp2pParts, key, store, guard: PeerGuard, metrics, clock: Callable[[], int], *,
                 timeouts: Timeouts = Timeouts(), block_limits: BlockLimits = BlockLimits()):
        self.parts, self.key, self.store, self.guard = parts, key, store, guard
        self.metrics, self.clock = metrics, clock
        self._timeouts, self._block_limits = timeouts, block_limits
        self.core: Core | None = None

    def register(self, pubsub) -> None:
        pubsub.set_topic_validator(CONSENSUS_TOPIC, self.validate_gossip, is_async_validator=False)

    def consensus_status(self) -> dict:
        if self.core is None:
            return {"enabled": False, "reason": "no committee configured ([consensus] committee)"}
        h = self.core.h
        last = self.core.decided.get(h.number - 1)
        return {"enabled": True, "committee": self.core.committee.id, "validators": len(self.core.committee.members),
                "validator": self.core.is_validator, "height": h.number, "round": h.round, "step": h.step,
                "pending": len(self.core.pending), "emergency": h.emergency is not None, "no_quorum": h.no_quorum,
                "last_signers": sorted(p.sender for p in last.precommits) if last else [],
                "members": dict(self.core.committee.members)}

    async def consensus_submit(self, value: bytes, wait_s: float = 0.0) -> dict:
        """Ask the committee to decide ``value``; wait up to ``wait_s`` seconds for the decision.
        The height is known only once the value is committed (a node that is behind, or a busy
        committee, decides it later than the height this node is working on): ``status`` is
        ``committed`` with its ``height``, or ``pending`` with ``height`` None."""
        if self.core is None:
            raise MeshnodeError("no_committee", "this node has no committee: set [consensus] committee")
        vid = cm.value_id(value)
        already = vid in self.core.decided_ids
        if not already:
            await self._check_value(value)  # (a GMP delegation value: this node's own vote needs it held)
            await self._consensus_apply(self.core.submit(value, self._consensus_now()))
            if wait_s > 0 and vid not in self.core.decided_ids:
                with trio.move_on_after(min(float(wait_s), MAX_WAIT_S)):
                    await self._decision_waiters.setdefault(vid, trio.Event()).wait()
        if vid in self.core.decided_ids and vid in self._unsaved:  # decided: "committed" once it is stored
            with trio.move_on_after(MAX_WAIT_S):
                await self._decision_waiters.setdefault(vid, trio.Event()).wait()
        out = {"value_id": vid.hex(), "working_height": self.core.height}
        if vid in self.core.decided_ids and vid not in self._unsaved:
            height, index = await self.store.read(decisions.place_of, value) or (None, None)
            return {**out, "status": "committed", "height": height, "index": index, "already_decided": already}
        return {**out, "status": "pending", "height": None, "index": None, "already_decided": False}

    # --- the driver ---------------------------------------------------------------------

    def _consensus_now(self) -> int:
        return int(trio.current_time() * 1000)

    async def run(self, subscription, committee: Committee) -> None:
        timeouts, block_limits = self._timeouts, self._block_limits
        start = await self.store.read(decisions.next_height)
        decided = await self.store.read(decisions.decided_value_ids)
        latest = await self.store.read(decisions.latest_epoch)
        if latest is not None:  # a later committee than the configured genesis one
            committee = Committee.of(latest[1], epoch=latest[0])
        self._previous: Core | None = None  # the last epoch's core: it still answers nodes catching up
        self._valid_values: dict[bytes, bool] = {}  # committee values checked against the store
        self._decision_waiters: dict[bytes, trio.Event] = {}  # value id -> proposers waiting for it
        self.core = Core(self.key, committee, timeouts=timeouts, height=start, decided_ids=decided,
                         valid=self._value_is_valid, recent=await self._recent_commits(committee),
                         block_limits=block_limits)
        self._timers: list[tuple[int, int, Schedule]] = []
        self._timer_seq = 0
        self._unsaved: dict[bytes, tuple[int, int]] = {}  # value id -> (height, index): decided, not yet stored
        self._to_store, stored = trio.open_memory_channel(WRITE_QUEUE)  # (the reader waits while the writer lags)
        self._timers_changed = trio.Event()
        self._resends = secrets.randbelow(1 << 32)  # not 0 after a restart: a resend must not repeat a seen id
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._consensus_reader, subscription)
            nursery.start_soon(self._consensus_timers)
            nursery.start_soon(self._consensus_watch_mesh)
            nursery.start_soon(self._consensus_writer, stored)

    async def _recent_commits(self, committee: Committee) -> tuple[Decide, ...]:
        rows = await self.store.read(decisions.recent_decisions, committee.id, KEPT_COMMITS)
        out = []
        for height, block, round_, raw in rows:
            try:
                out.append(Decide(height, block, round_, tuple(cm.decode(p) for p in raw)))
            except MeshnodeError as exc:  # a damaged row answers nobody; the node itself is unaffected
                log.warning("stored commit of height %d not usable: %s", height, exc.reason)
        return tuple(out)

    async def _consensus_watch_mesh(self) -> None:
        """Ask for missed commits when a peer joins the topic's gossip mesh: the first peers
        after this node (re)starts, a peer back from a restart, a healed partition. Until a
        peer is in the mesh, nothing published reaches anyone."""
        known: set = set()
        again_at = None  # asked once more a resend period later: a fresh stream may lose the first ask
        while True:
            gossipsub = self.parts.gossipsub
            peers = set(gossipsub.mesh.get(CONSENSUS_TOPIC, ())) if gossipsub is not None else set()
            now = self._consensus_now()
            if peers - known or (again_at is not None and now >= again_at):
                again_at = now + self._timeouts.resend_ms if peers - known else None
                self.metrics.inc("consensus_catchup_asked")
                log.debug("asking for commits from height %d (%d new peer(s) in the mesh)", self.core.height,
                          len(peers - known))
                await self._consensus_apply(self.core.join(now))
            known = peers
            await trio.sleep(JOIN_POLL_S)

    async def _consensus_reader(self, subscription) -> None:
        while True:
            message = await subscription.get()
            try:
                encoded = gossip.unwrap(message.data)
            except MeshnodeError as exc:
                self.metrics.inc("consensus_rejected", code=exc.code)
                self._consensus_author_invalid(message, exc.code)
                continue
            faults = set()
            for data in dict.fromkeys(encoded):  # (one step's messages in their order; a copy counts once)
                fault = await self._consensus_take(data)
                if fault in CHARGED:
                    faults.add(fault)
            for code in faults:  # (once per envelope and fault: a single bad envelope is one offence)
                self._consensus_author_invalid(message, code)

    def validate_gossip(self, forwarder, message) -> bool:
        """The topic's validator: an envelope that is not ``[[messages], counter]`` is refused before
        it is relayed or queued, and its author charged. The inner messages, each signed, are checked
        as they are taken, after delivery."""
        try:
            gossip.unwrap(message.data)
        except MeshnodeError as exc:
            self.metrics.inc("consensus_rejected", code=exc.code)
            self._consensus_author_invalid(message, exc.code)
            return False
        return True

    def _consensus_author_invalid(self, message, code: str) -> None:
        """Charge the gossip message's author (its pubsub signer: the node that wrapped it)."""
        from libp2p.peer.id import ID

        try:
            self.guard.invalid_from_peer_id(ID(message.from_id), code)
        except Exception as exc:  # an author field that names no peer: counted by the metric already
            log.debug("consensus gossip author not charged: %s", exc)

    async def _consensus_take(self, data: bytes) -> str | None:
        """Take one encoded message; the code it was refused with, if it was."""
        try:
            msg = cm.decode(data, sender_ok=self._sender_ok)
        except MeshnodeError as exc:
            self.metrics.inc("consensus_rejected", code=exc.code)
            return exc.code
        if msg.sender == self.key.did:
            return
        self.metrics.inc("consensus_received", kind=msg.kind)
        core = self._previous if self._previous and msg.committee == self._previous.committee.id else self.core
        if msg.value is not None and msg.kind in (cm.PROPOSAL, cm.COMMIT, cm.REQUEST):
            values = cm.block_values(msg.value)  # (decode checked the block)
            committed = msg.kind == cm.COMMIT and any(v.startswith(contest.VALUE_PREFIX) for v in values) \
                and _proven(core, msg)  # (the signatures are checked twice only for a GMP delegation value)
            for value in values:
                await self._check_value(value, committed=committed)
        await self._consensus_apply(self._core_step(core.receive, msg, self._consensus_now()), core)

    def _sender_ok(self, msg: cm.Message) -> bool:
        """Proposals, votes and requests of a committee this node knows come from its validators
        (checked before the block is read); commits and catch-up asks may come from anyone, and
        another committee's messages tell that an epoch was missed."""
        if msg.kind in (cm.COMMIT, cm.CATCHUP) or msg.sender == self.key.did:
            return True
        for core in (self.core, self._previous):
            if core is not None and msg.committee == core.committee.id:
                return core.committee.weight(msg.sender) > 0
        return True

    async def _consensus_timers(self) -> None:
        while True:
            deadline = self._timers[0][0] / 1000 if self._timers else float("inf")
            with trio.move_on_at(deadline):
                await self._timers_changed.wait()
            self._timers_changed = trio.Event()
            now = self._consensus_now()
            while self._timers and self._timers[0][0] <= now:
                _, _, core, s = heapq.heappop(self._timers)
                if core is self.core:  # timers of a finished epoch lapse
                    reachable = frozenset(self.parts.connected_dids()) if s.step == EMERGENCY else None  # its side
                    await self._consensus_apply(self._core_step(core.timeout, s.step, s.height, s.round, now,
                                                                reachable))

    def _core_step(self, step, *args) -> list:
        """One input to the core; a fault in it (a bug: the core checks its inputs) is logged and
        counted, and ends neither the timers nor the node, which go on with the next input."""
        try:
            return step(*args)
        except Exception:
            self.metrics.inc("consensus_core_errors", step=step.__name__)
            log.exception("consensus core failed on %s", step.__name__)
            return []

    async def _consensus_apply(self, actions: list, core: Core | None = None) -> None:
        """Carry out the core's actions in ``_order``: messages and timers before what is stored,
        which the writer task does in order while the reader goes on (a block with a committee
        value is stored and switched to here, before anything of the next height is read)."""
        producer, ended = core or self.core, -1  # ended: the last height of an epoch this call switched from
        said: list[cm.Message] = []  # messages go out together (consensus_gossip), before anything is stored
        for a in sorted(actions, key=_order):
            if producer is not self.core:  # a finished epoch (or one that just ended) only answers catch-ups
                if isinstance(a, Broadcast) and (a.message.kind == cm.COMMIT or a.message.height <= ended):
                    said.append(a.message)  # (its votes for the height that ended it still go)
                continue
            if isinstance(a, Broadcast):
                said.append(a.message)
                continue
            if isinstance(a, Schedule):
                self._timer_seq += 1
                heapq.heappush(self._timers, (a.at_ms, self._timer_seq, self.core, a))
                self._timers_changed.set()
                continue
            await self._consensus_publish(said)
            said = []
            if isinstance(a, Decide):
                committee, values = self.core.committee.id, a.values
                for i, value in enumerate(values):
                    self._unsaved[cm.value_id(value)] = (a.height, i)
                await self._write(self._decided, committee, a, self.clock())
                if _switches_epoch(a):
                    await self._written()
                    await self._maybe_new_epoch(a)
                    ended = a.height
            elif isinstance(a, Emergency):
                await self._write(self._emergency, self.core.committee.id, a)
            elif isinstance(a, NoQuorum):  # a minority side: no decision at all (protocols/consensus.md 6)
                self.metrics.inc("consensus_no_quorum")
                log.info("height %d undecided: this side of the committee holds %d of %d weight, under half:"
                         " no emergency decision", a.height, a.heard, a.total)
            elif isinstance(a, Revisit):
                await self._write(self.store.write, decisions.revisit, self.core.committee.id, a.height, a.confirmed)
            elif isinstance(a, Evidence):
                await self._equivocation(a)
        await self._consensus_publish(said)

    async def _write(self, job, *args) -> None:
        await self._to_store.send((job, args))

    async def _written(self) -> None:
        """Until everything handed to the writer is stored."""
        done = trio.Event()
        await self._write(self._set, done)
        await done.wait()

    @staticmethod
    async def _set(event: trio.Event) -> None:
        event.set()

    async def _consensus_writer(self, jobs) -> None:
        """Stores what the core decided, in order. A decision is acknowledged (votes went out for
        the next height) before it is stored, so on shutdown what is queued is still stored, for
        up to ``DRAIN_S`` (else after a restart the height would be decided again, and differently)."""
        try:
            async for job, args in jobs:
                with trio.CancelScope(shield=True):  # (a job once begun is finished)
                    await job(*args)
        finally:
            with trio.move_on_after(DRAIN_S) as drain:
                drain.shield = True
                while True:
                    try:
                        job, args = jobs.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                        break
                    await job(*args)
            if drain.cancelled_caught:
                log.warning("shutting down: decisions not all stored within %.0f s", DRAIN_S)

    async def _decided(self, committee: str, a: Decide, now: int) -> None:
        values = a.values
        await self.store.write(self._save_decision, committee, a, now)  # (one trip to the store)
        self.metrics.inc("consensus_decisions")
        self.metrics.inc("consensus_values_decided", len(values))
        for value in values:
            vid = cm.value_id(value)
            self._unsaved.pop(vid, None)
            waiter = self._decision_waiters.pop(vid, None)
            if waiter is not None:
                waiter.set()
        if a.from_commit:
            self.metrics.inc("consensus_caught_up")
            log.info("caught up: height %d (%d values, decided in round %d) from a commit", a.height,
                     len(values), a.round)
        else:
            log.info("decided height %d (%d values) in round %d", a.height, len(values), a.round)

    async def _emergency(self, committee: str, a: Emergency) -> None:
        await self.store.write(decisions.save_emergency, committee, a.height, a.block, self.clock())
        self.metrics.inc("consensus_emergencies")
        log.warning("no quorum for height %d: provisional emergency_consensus decision", a.height)

    async def _consensus_publish(self, messages: list[cm.Message]) -> None:
        """``messages`` in as few gossip messages as ``consensus_gossip.bundles`` allows."""
        encoded = [msg.encode() for msg in messages]
        for group in gossip.bundles(encoded):
            self._resends += 1  # a counter per publish: gossip never takes a resend for a duplicate
            try:
                await self.parts.pubsub.publish(CONSENSUS_TOPIC, gossip.wrap([encoded[i] for i in group], self._resends))
            except Exception as exc:  # no peers yet, or shutting down: the core resends
                log.debug("consensus messages not sent: %s", exc)
                continue
            self.metrics.inc("consensus_gossip_published")
            for i in group:
                self.metrics.inc("consensus_sent", kind=messages[i].kind)

    # --- committee epochs ------------------------------------------------------------

    async def propose_next_committee(self) -> dict:
        """Ask the committee to move to the next epoch, with the newest trust statements its
        members published (consensus/epochs.py derives the weights from them)."""
        if self.core is None:
            raise MeshnodeError("no_committee", "this node has no committee: set [consensus] committee")
        members = {did for did, _ in self.core.committee.members}
        dids = await self.store.read(decisions.newest_member_statements, members)
        value = epochs.committee_value(epochs.epoch_of(self.core.committee) + 1, dids)
        await self._check_value(value)
        if not self._valid_values.get(cm.value_id(value)):
            raise MeshnodeError("no_committee", "the statements held give no next committee (too little trust yet)")
        return await self.consensus_submit(value)

    def _value_is_valid(self, value: bytes) -> bool:
        """The core's validity rule: any value, except committee values and GMP delegation values
        (gmp.md 6.3 step 3) this node has not checked (and found good) against its store; those get
        a nil prevote until it has."""
        try:
            parsed = epochs.parse_committee_value(value)
        except epochs.EpochError:
            return False
        if value.startswith(contest.VALUE_PREFIX):
            return self._valid_values.get(cm.value_id(value), False)
        return parsed is None or self._valid_values.get(cm.value_id(value), False)

    async def _check_value(self, value: bytes, committed: bool = False) -> None:
        vid = cm.value_id(value)
        if vid in self._valid_values:
            return
        if value.startswith(contest.VALUE_PREFIX):
            await self._check_gmp_value(vid, value, committed)
            return
        try:
            parsed = epochs.parse_committee_value(value)
        except epochs.EpochError:
            self._valid_values[vid] = False
            return
        if parsed is None:
            return
        epoch, dids = parsed
        held = await self.store.read(decisions.held_statements, dids, now_ms=self.clock())
        ok = False
        if held is not None:
            try:
                epochs.derive(self.core.committee, held, epoch)
                ok = True
            except epochs.EpochError as exc:
                log.info("committee value for epoch %d refused: %s", epoch, exc.reason)
        if held is not None or not ok:
            self._valid_values[vid] = ok  # a value whose statements are missing is asked again later

    async def _check_gmp_value(self, vid: bytes, value: bytes, committed: bool) -> None:
        """A GMP delegation value is valid once this node holds its nomination and task version and
        the nomination is about that version (``gmp.delegate.value_holds``); one not held yet is
        looked at again with the next message carrying it. In a commit whose precommits prove a quorum
        (a node catching up may not be in the goal's audience) a well-formed one is taken."""
        try:
            ok = bool(contest.parse_delegation_value(value)) if committed else \
                await self.store.read(delegate.value_holds, value)
        except contest.BadValue:
            self._valid_values[vid] = False
            return
        if ok:
            self._valid_values[vid] = True
        else:
            self.metrics.inc("consensus_gmp_value_not_held")

    async def _maybe_new_epoch(self, decision: Decide) -> None:
        """The first committee value of a decided block switches to its epoch (every node reads
        the same block, so all switch alike; a later one in the same block names that epoch again
        and is ignored). Decided values passed the validity rule, so they parse."""
        parsed = next(filter(None, map(epochs.parse_committee_value, decision.values)), None)
        if parsed is None:
            return
        epoch, dids = parsed
        held = await self.store.read(decisions.held_statements, dids, now_ms=self.clock())
        if held is None:  # decided by a quorum that held them: fetch, then switch (see the closing note)
            log.warning("epoch %d decided but its statements are not all here yet", epoch)
            return
        new = epochs.derive(self.core.committee, held, epoch)
        await self.store.write(decisions.save_epoch, epoch, new.id, new.weights, decision.height + 1, self.clock())
        old = self.core
        self._previous = old
        self.core = Core(self.key, new, timeouts=self._timeouts, height=decision.height + 1,
                         decided_ids=old.decided_ids, valid=self._value_is_valid, block_limits=self._block_limits)
        self.metrics.inc("consensus_epochs")
        await self._consensus_apply(self.core.take_over(old, self._consensus_now()))
        log.info("committee epoch %d: %d validators from height %d", epoch, len(new.members), decision.height + 1)

    def _save_decision(self, db, committee: str, decision: Decide, now: int) -> None:
        """In the store's thread: the decided block's values, and consensus conduct evidence for
        the validators whose signed precommit made the decision (once per decision: the
        reference is the height's commit)."""
        decisions.save_decision(db, committee, decision.height, decision.values, decision.round,
                                [p.encode() for p in decision.precommits], now)
        ref = f"commit:{committee}:{decision.height}"
        for p in decision.precommits:
            if p.sender != self.key.did:
                records.record_evidence(db, p.sender, [Observed("consensus_ok", now, ref=ref)], now_ms=now)

    async def _equivocation(self, evidence: Evidence) -> None:
        """Two conflicting signed votes: kept as a container anyone can check, and counted."""
        from meshnode.base.container import build_container

        c = build_container(self.key, "equivocation_evidence",
                            {"validator": evidence.first.sender, "first": evidence.first.encode(),
                             "second": evidence.second.encode()}, timestamp_ms=self.clock())
        await self.store.write(lambda db: db.put_container(c, received_at_ms=self.clock()))
        await self.store.write(lambda db: records.record_equivocation(db, evidence.first.sender, c.did,
                                                                      now_ms=self.clock()))
        self.metrics.inc("consensus_equivocations")
        log.warning("validator %s equivocated: evidence %s", evidence.first.sender, c.did)
