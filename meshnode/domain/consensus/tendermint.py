"""Binding decisions by a weighted BFT committee: Tendermint's algorithm, sans-IO.

Theory of operation
-------------------
The mesh decides a sequence of *blocks*, one per *height*; a block is an
ordered batch of values (``blocks.py``: its id is the Merkle root over its
values, so one value's inclusion is provable from the signed commit). Each
height runs in rounds; in each round one validator (``Committee.proposer``)
proposes a block, then validators *prevote* and *precommit* for it or for
nil. This follows
"The latest gossip on BFT consensus" (Buchman, Kwon, Milosevic, 2018), with
votes counted by weight: a quorum is more than two thirds of the weight.

* A validator that precommits a value *locks* on it and prevotes only it in
  later rounds, unless a quorum prevoted another value in a round after its
  lock (a proposal carries that ``valid_round``). Two quorums overlap in more
  than one third of the weight, so while less than a third is Byzantine no two
  values can both gather quorums of precommits at one height: that is safety,
  whatever the message delays.
* Timeouts grow with the round, so once messages arrive within a bound, some
  round has an honest proposer and long enough timeouts, and decides: that is
  liveness after the network stabilises.

Values asked for wait in ``pending`` at every validator (the proposer
rotates). A proposer puts the oldest pending values not yet decided into its
block, up to ``BlockLimits`` (a count and a size); what does not fit, or was
asked too late for this height, goes into a later block. A block is valid
only if it holds no value already decided, so a value is decided once.

The core is a state machine: ``submit`` (a value to decide), ``receive`` (a
verified message) and ``timeout`` go in, together with the time; *actions*
come out: messages to broadcast, timeouts to schedule, decisions, evidence of
equivocation, and emergency decisions. It does no I/O and keeps no clock.

A height starts when there is something to decide (a request, or messages of
that height from others), so an idle committee sends nothing. A node that
falls behind asks for commits (``catchup``) and applies the commit
certificates it gets back (the value and a quorum of signed precommits).

Emergency mode (HMP ``emergency_consensus``, on node loss or a partition):
when a started height has not been decided for ``emergency_after_ms`` and
this node's side holds at least half of the committee's weight (itself
included: each side of a 2/2 split), the core says once which block it would
pick — the one with the most prevote weight it has seen, else the block it
would propose — as a provisional ``Emergency`` decision. Who is on its side
is an input, like the time: the driver says which nodes it reaches
(``timeout(..., reachable)``). A smaller side (a lone validator of four)
takes no decision: it says ``NoQuorum`` once and looks again every
``emergency_after_ms``. When the height is decided later, ``Revisit`` says
whether the committed block confirmed the provisional one.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from meshnode.domain.consensus import blocks
from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus import proofs
from meshnode.domain.consensus.actions import (  # noqa: F401 (the actions are this module's interface too)
    ANNOUNCE, EMERGENCY, FUTURE_HEIGHTS, IDLE, KEPT_COMMITS, MAX_PENDING, PRECOMMIT_STEP, PREVOTE_STEP, PROPOSE, RESEND,
    BlockLimits, Broadcast, Decide, Emergency, Evidence, NoQuorum, Revisit, Schedule, Timeouts)
from meshnode.domain.consensus.committee import Committee
from meshnode.base.identity.keys import NodeKey

_STEPS = (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT)

# --- per-height state -------------------------------------------------------------


@dataclass
class _Height:
    number: int
    round: int = 0
    step: str = IDLE
    locked_value: bytes | None = None
    locked_round: int = -1
    valid_value: bytes | None = None
    valid_round: int = -1
    started_ms: int | None = None
    # round -> value id -> proposal from that round's proposer (an equivocating one may send several)
    proposals: dict[int, dict[bytes, m.Message]] = field(default_factory=dict)
    # (kind, round) -> sender -> value id (None: nil) -> vote; an equivocator's votes all count,
    # each for its own value (it is within the Byzantine third the quorums allow for)
    votes: dict[tuple[str, int], dict[str, dict[bytes | None, m.Message]]] = field(default_factory=dict)
    seen_in_round: dict[int, set[str]] = field(default_factory=dict)  # round -> senders of anything
    # running tallies, so that counting a vote costs O(1) however large the committee:
    seen_weight: dict[int, int] = field(default_factory=dict)  # round -> weight of its senders
    any_weight: dict[tuple[str, int], int] = field(default_factory=dict)  # (kind, round) -> weight of voters
    value_weight: dict[tuple[str, int, bytes | None], int] = field(default_factory=dict)  # ... for one value
    fired: set[tuple] = field(default_factory=set)  # one-shot rules already taken
    emergency: bytes | None = None
    no_quorum: bool = False  # the emergency timer found this node's side under half the weight (NoQuorum)
    valid_blocks: set[bytes] = field(default_factory=set)  # blocks found valid at this height (it stays so)


class Core:
    def __init__(self, key: NodeKey, committee: Committee, *, timeouts: Timeouts = Timeouts(), height: int = 0,
                 valid: Callable[[bytes], bool] = lambda value: True, decided_ids: set[bytes] | None = None,
                 recent: tuple[Decide, ...] = (), block_limits: BlockLimits = BlockLimits()):
        self.key = key
        self.committee = committee
        self.timeouts = timeouts
        self.block_limits = block_limits
        self._valid = valid
        # ids of every value decided so far (the driver loads them from its store): a value is
        # decided once, however often its request is replayed or proposed again
        self.decided_ids: set[bytes] = set(decided_ids or ())
        self.h = _Height(height)
        self.pending: OrderedDict[bytes, bytes] = OrderedDict()  # value id -> value, oldest first
        self.decided: dict[int, Decide] = {}
        self.future: dict[int, list[m.Message]] = {}
        self.equivocators: set[str] = set()
        self._out: list = []
        self._loopback: list[m.Message] = []  # our own messages, counted once the current rule is done
        self._unannounced: list[bytes] = []  # values asked here, not yet broadcast as a request
        self._unannounced_ids: set[bytes] = set()  # their ids
        self._announced_at = -(2**62)  # when we last broadcast a request
        self._now = 0
        self._asked: tuple[int, int] | None = None  # (height, when) of our last catch-up request
        self._helped: dict[int, int] = {}  # height -> when we last sent its commit to a node behind
        self._decided_at: dict[int, int] = {}
        self._commits: dict[int, m.Message] = {}  # height -> our signed commit message (commit_message)
        self._commit_raw: dict[int, tuple[bytes, ...]] = {}  # height -> the precommits' bytes of a commit we applied
        for d in recent[-KEPT_COMMITS:]:  # decisions from the store: a restarted node answers catch-ups too
            if d.height < height:
                self.decided[d.height] = d

    def valid(self, block: bytes) -> bool:
        """A block this node may vote for or take from a commit: well formed, each value valid by
        the driver's rule (``valid``) and none decided before. Found valid once at a height, it
        stays so (decided values change only with the height; the driver's rule only learns)."""
        if block in self.h.valid_blocks:
            return True
        try:
            values = m.block_values(block)
        except blocks.BlockError:
            return False
        if all(m.value_id(v) not in self.decided_ids and self._valid(v) for v in values):
            self.h.valid_blocks.add(block)
            return True
        return False

    @property
    def height(self) -> int:
        return self.h.number

    @property
    def is_validator(self) -> bool:
        return self.committee.weight(self.key.did) > 0

    # --- inputs ---------------------------------------------------------------------

    def submit(self, value: bytes, now: int) -> list:
        """Ask the committee to decide ``value``: it is pending here at once, and broadcast as a
        request: at once if this node sent none in the last ``request_batch_ms``, else together
        with the others asked until that much time has passed (one message for a burst of
        values, which every validator would otherwise receive and relay one by one)."""
        if len(value) > m.MAX_VALUE:
            raise m.MessageError("value_too_large", f"a value is at most {m.MAX_VALUE} bytes")
        self._now = now
        vid = m.value_id(value)
        new = vid not in self.decided_ids and vid not in self.pending and vid not in self._unannounced_ids
        if new and len(self._unannounced) < MAX_PENDING:  # (a retried submit is asked once: a block holds a value once)
            self._unannounced.append(value)
            self._unannounced_ids.add(vid)
            batch = self.timeouts.request_batch_ms
            if len(self._unannounced) == 1:  # (more: an announcement is already scheduled)
                if batch <= 0 or now - self._announced_at >= batch:
                    self._announce()
                else:
                    self._out.append(Schedule(ANNOUNCE, self.h.number, 0, self._announced_at + batch))
        self._add_pending(value)
        self._maybe_start()
        return self._flush()

    def receive(self, msg: m.Message, now: int) -> list:
        """A message whose signature was verified (``messages.decode``)."""
        self._now = now
        if msg.committee == self.committee.id:
            self._dispatch(msg)
        elif msg.kind in (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT) and msg.height > self.h.number:
            self._ask_for_commits()  # another committee already works on a later height: we missed an epoch
        return self._flush()

    def join(self, now: int) -> list:
        """This node (re)joined the mesh or a new peer joined it: ask for the commits it may have
        missed while away (``catchup`` for its current height). Nodes that hold them answer; a
        node that is itself behind the asker learns so and asks in turn. At most once per
        ``resend_ms`` for one height, however often peers come and go."""
        self._now = now
        if self._asked is not None and self._asked[0] == self.h.number and now - self._asked[1] < self.timeouts.resend_ms:
            return self._flush()
        self._asked = (self.h.number, now)
        self._send(m.CATCHUP, self.h.number, 0)
        return self._flush()

    def take_over(self, old: "Core", now: int) -> list:
        """Become the next epoch's core after ``old``: what was asked and not yet decided stays
        asked, and the values ``old`` still held back for its request batch are announced to the
        new committee now (announced by ``old``, they would name a committee that has ended)."""
        self._now = now
        self.pending = old.pending
        waiting = [v for v in dict.fromkeys(old._unannounced) if m.value_id(v) not in self.decided_ids]
        old._unannounced, old._unannounced_ids = [], set()
        self._unannounced, self._unannounced_ids = waiting, {m.value_id(v) for v in waiting}
        self._announce()
        self._maybe_start()
        return self._flush()

    def resume(self, now: int) -> list:
        """Start working on what is pending (a core that took over an epoch's requests)."""
        self._now = now
        self._maybe_start()
        return self._flush()

    def timeout(self, step: str, height: int, round_: int, now: int, reachable: frozenset[str] | None = None) -> list:
        """A timer this core scheduled is due. ``reachable`` (for the emergency timer): the nodes
        this one can reach now, as its driver knows them (live connections); None: not known,
        and the validators heard at this height stand for them."""
        self._now = now
        h = self.h
        if step == ANNOUNCE:
            self._announce()
        elif height == h.number:
            if step == EMERGENCY:
                self._maybe_emergency(reachable)
            elif step == RESEND:
                self._resend()
            elif round_ == h.round:
                if step == PROPOSE and h.step == PROPOSE:
                    h.step = PREVOTE_STEP
                    self._vote(m.PREVOTE, None)
                elif step == PREVOTE_STEP and h.step == PREVOTE_STEP:
                    h.step = PRECOMMIT_STEP
                    self._vote(m.PRECOMMIT, None)
                elif step == PRECOMMIT_STEP:
                    self._start_round(round_ + 1)
                self._check()
        return self._flush()

    def _dispatch(self, msg: m.Message) -> None:
        if msg.kind == m.REQUEST:
            if self.committee.weight(msg.sender) > 0 or msg.sender == self.key.did:
                for value in m.block_values(msg.value):
                    self._add_pending(value)
                self._maybe_start()
        elif msg.kind == m.CATCHUP:
            if msg.height > self.h.number:
                self._ask_for_commits()  # the asker has decided more than we have: we are behind
            else:
                self._answer_catchup(msg)
        elif msg.kind == m.COMMIT:
            self._apply_commit(msg)
        elif self.committee.weight(msg.sender) == 0:
            return  # only validators propose and vote
        elif msg.height < self.h.number:
            self._help(msg)  # the sender is behind: it needs the commit of that height
        elif msg.height > self.h.number:
            if msg.height <= self.h.number + FUTURE_HEIGHTS:
                self.future.setdefault(msg.height, []).append(msg)
            self._ask_for_commits()
        else:
            self._record(msg)

    # --- the rules ------------------------------------------------------------------

    def _record(self, msg: m.Message) -> None:
        h = self.h
        weight = self.committee.weight(msg.sender)
        if msg.kind == m.PROPOSAL:
            if msg.sender != self.committee.proposer(h.number, msg.round):
                return
            held = h.proposals.setdefault(msg.round, {})
        else:  # (get before setdefault: no new dicts for the many messages already held)
            box = h.votes.get((msg.kind, msg.round))
            if box is None:
                box = h.votes[(msg.kind, msg.round)] = {}
            held = box.get(msg.sender)
            if held is None:
                held = box[msg.sender] = {}
        if msg.value_id in held:
            return
        if held:
            self._evidence(next(iter(held.values())), msg)
        elif msg.kind != m.PROPOSAL:
            h.any_weight[(msg.kind, msg.round)] = h.any_weight.get((msg.kind, msg.round), 0) + weight
        held[msg.value_id] = msg
        if msg.kind != m.PROPOSAL:
            key = (msg.kind, msg.round, msg.value_id)
            h.value_weight[key] = h.value_weight.get(key, 0) + weight
        senders = h.seen_in_round.get(msg.round)
        if senders is None:
            senders = h.seen_in_round[msg.round] = set()
        if msg.sender not in senders:
            senders.add(msg.sender)
            h.seen_weight[msg.round] = h.seen_weight.get(msg.round, 0) + weight
        if h.step == IDLE:
            self._start_round(0)
        self._check()

    def _check(self) -> None:
        """Apply every rule that holds, until none does (each is one-shot or changes the step);
        then count our own new messages, which may make more rules hold."""
        while True:
            before = (self.h.number, self.h.round, self.h.step, len(self.h.fired))
            self._rules()
            if (self.h.number, self.h.round, self.h.step, len(self.h.fired)) == before:
                if not self._loopback:
                    return
                msg = self._loopback.pop(0)
                if msg.height == self.h.number:
                    self._record(msg)

    def _rules(self) -> None:
        # (the tallies are read through local names and quorums compared inline: this runs once
        # for every message a validator counts, so it is the hot loop of a large committee)
        h, c = self.h, self.committee
        r = h.round
        weight_of, any_weight = h.value_weight.get, h.any_weight.get
        twice_total = 2 * c.total  # a quorum: 3 * weight > 2 * total (Committee.quorum)
        # decide: a proposal and a quorum of precommits for it, in any round
        for rnd, proposals in h.proposals.items():  # (no copies: a decision returns at once)
            for proposal in proposals.values():
                if 3 * weight_of((m.PRECOMMIT, rnd, proposal.value_id), 0) > twice_total \
                        and self.valid(proposal.value):
                    self._decide(proposal.value, rnd)
                    return
        # a third of the weight is already in a later round: join it
        for rnd, weight in h.seen_weight.items():
            if rnd > r and c.third(weight):
                self._start_round(rnd)
                return
        if h.step == IDLE:
            return
        proposals = list(h.proposals.get(r, {}).values())
        for proposal in proposals:
            if h.step != PROPOSE:
                break
            v, vr = proposal.value, proposal.valid_round
            if vr == -1:
                ok = self.valid(v) and (h.locked_round == -1 or h.locked_value == v)
                h.step = PREVOTE_STEP
                self._vote(m.PREVOTE, proposal.value_id if ok else None)
            elif vr < r and 3 * weight_of((m.PREVOTE, vr, proposal.value_id), 0) > twice_total:
                ok = self.valid(v) and (h.locked_round <= vr or h.locked_value == v)
                h.step = PREVOTE_STEP
                self._vote(m.PREVOTE, proposal.value_id if ok else None)
        if h.step == PREVOTE_STEP and ("prevote-any", r) not in h.fired \
                and 3 * any_weight((m.PREVOTE, r), 0) > twice_total:
            h.fired.add(("prevote-any", r))
            self._schedule(PREVOTE_STEP)
        for proposal in proposals:
            if (h.step in (PREVOTE_STEP, PRECOMMIT_STEP) and ("lock", r) not in h.fired
                    and 3 * weight_of((m.PREVOTE, r, proposal.value_id), 0) > twice_total
                    and self.valid(proposal.value)):
                h.fired.add(("lock", r))
                if h.step == PREVOTE_STEP:
                    h.locked_value, h.locked_round = proposal.value, r
                    h.step = PRECOMMIT_STEP
                    self._vote(m.PRECOMMIT, proposal.value_id)
                h.valid_value, h.valid_round = proposal.value, r
        if h.step == PREVOTE_STEP and 3 * weight_of((m.PREVOTE, r, None), 0) > twice_total:
            h.step = PRECOMMIT_STEP
            self._vote(m.PRECOMMIT, None)
        if ("precommit-any", r) not in h.fired and 3 * any_weight((m.PRECOMMIT, r), 0) > twice_total:
            h.fired.add(("precommit-any", r))
            self._schedule(PRECOMMIT_STEP)

    # --- steps ----------------------------------------------------------------------

    def _maybe_start(self) -> None:
        if self.h.step == IDLE and self.pending:
            self._start_round(0)
            self._check()

    def _start_round(self, round_: int) -> None:
        h = self.h
        if h.started_ms is None:
            h.started_ms = self._now
            self._out.append(Schedule(EMERGENCY, h.number, 0, self._now + self.timeouts.emergency_after_ms))
            self._out.append(Schedule(RESEND, h.number, 0, self._now + self.timeouts.resend_ms))
        h.round, h.step = round_, PROPOSE
        if self.committee.proposer(h.number, round_) == self.key.did:
            block = h.valid_value if h.valid_value is not None else self._next_block()
            if block is not None:
                self._send(m.PROPOSAL, h.number, round_, value_id=m.block_id_of(block), valid_round=h.valid_round,
                           value=block)
                return
        self._schedule(PROPOSE)

    def _resend(self) -> None:
        """Our messages of the current round again, for peers that lost them, with the proposal and
        the quorum of prevotes behind our valid value (its proof of lock, which others need to
        accept it in a later round); and the timer again."""
        h = self.h
        again = [p for p in h.proposals.get(h.round, {}).values() if p.sender == self.key.did]
        for kind in (m.PREVOTE, m.PRECOMMIT):
            again.extend(h.votes.get((kind, h.round), {}).get(self.key.did, {}).values())
        if h.valid_value is not None:
            vid = m.block_id_of(h.valid_value)
            again.extend(p for p in h.proposals.get(h.valid_round, {}).values() if p.value_id == vid)
            again.extend(said[vid] for said in h.votes.get((m.PREVOTE, h.valid_round), {}).values() if vid in said)
        self._out.extend(Broadcast(msg) for msg in again)
        block = self._next_block() if h.step != IDLE else None
        if block is not None:  # what it would propose, asked again
            self._out.append(Broadcast(m.sign(self.key, m.REQUEST, self.committee.id, h.number, 0,
                                              value_id=m.block_id_of(block), value=block)))
        self._out.append(Schedule(RESEND, h.number, 0, self._now + self.timeouts.resend_ms))

    def _decide(self, block: bytes, round_: int) -> None:
        h = self.h
        vid = m.block_id_of(block)
        precommits = tuple(said[vid] for said in h.votes.get((m.PRECOMMIT, round_), {}).values() if vid in said)
        self._record_decision(Decide(h.number, block, round_, precommits))

    def _record_decision(self, decision: Decide) -> None:
        provisional = self.h.emergency
        self.decided[decision.height] = decision
        decided_ids = [m.value_id(v) for v in decision.values]
        self.decided_ids.update(decided_ids)
        self._decided_at[decision.height] = self._now
        self._decided_at.pop(decision.height - KEPT_COMMITS, None)
        self._out.append(decision)
        if provisional is not None:
            self._out.append(Revisit(decision.height, provisional, decision.block))
        for vid in decided_ids:  # what was asked and not in this block stays pending: the next block takes it
            self.pending.pop(vid, None)
        self.h = _Height(decision.height + 1)
        self._loopback.clear()  # our votes of the decided height count no more
        self.decided.pop(decision.height - KEPT_COMMITS, None)  # keep recent commits for catch-up answers
        self._commits.pop(decision.height - KEPT_COMMITS, None)
        self._commit_raw.pop(decision.height - KEPT_COMMITS, None)
        for msg in self.future.pop(self.h.number, []):
            self._dispatch(msg)
        self._maybe_start()

    # --- catch-up -------------------------------------------------------------------

    def _help(self, msg: m.Message) -> None:
        """Send the commit of ``msg.height`` to a validator still working on it, at most once
        per height every ``resend_ms`` (it resends its votes until it moves on)."""
        decided, at = self.decided.get(msg.height), self._decided_at.get(msg.height)
        if decided is None or (at is not None and self._now - at < self.timeouts.resend_ms):
            return  # late votes right after a decision are normal; a node still voting later is behind
        last = self._helped.get(msg.height)
        if last is None or self._now - last >= self.timeouts.resend_ms:
            self._helped[msg.height] = self._now
            self._answer_catchup(msg, count=1)
            if len(self._helped) > KEPT_COMMITS:
                self._helped.pop(min(self._helped))

    def _answer_catchup(self, msg: m.Message, count: int = FUTURE_HEIGHTS) -> None:
        for height in range(msg.height, msg.height + count):
            commit = self.commit_message(height)
            if commit is None:
                break
            self._out.append(Broadcast(commit))

    def commit_message(self, height: int) -> m.Message | None:
        """The signed commit of a height this node decided and still keeps (its block and the
        precommits that decided it), as catch-up answers carry it; None otherwise. Signing is
        deterministic, so the message is made once per height and kept while the decision is."""
        d = self.decided.get(height)
        if d is None or (d.precommits and d.precommits[0].value_id != m.block_id_of(d.block)):
            return None  # (a height decided before blocks: its precommits sign the value, see protocols/consensus.md)
        made = self._commits.get(height)
        if made is None:
            made = self._commits[height] = m.sign(
                self.key, m.COMMIT, self.committee.id, height, d.round, value_id=m.block_id_of(d.block), value=d.block,
                commit=self._commit_raw.pop(height, None) or tuple(p.encode() for p in d.precommits))
        return made

    def _ask_for_commits(self) -> None:
        """Once per height (again after a while): we are behind, who has the commits?"""
        if self._asked is None or self._asked[0] != self.h.number or \
                self._now - self._asked[1] >= self.timeouts.resend_ms:
            self._asked = (self.h.number, self._now)
            self._send(m.CATCHUP, self.h.number, 0)

    def _apply_commit(self, msg: m.Message) -> None:
        if msg.height != self.h.number:
            if self.h.number < msg.height <= self.h.number + FUTURE_HEIGHTS:
                self.future.setdefault(msg.height, []).append(msg)
                self._ask_for_commits()
            return
        try:
            precommits = proofs.commit_precommits(self.committee, msg.height, msg.round, msg.value_id, msg.commit)
        except m.MessageError:
            return
        if self.valid(msg.value):
            self._commit_raw[msg.height] = msg.commit  # passed on as received, not encoded again per node
            asked = self._asked
            self._record_decision(Decide(msg.height, msg.value, msg.round, precommits, from_commit=True))
            if asked is not None and msg.height >= asked[0] + FUTURE_HEIGHTS - 1 and self.h.number == msg.height + 1:
                self._ask_for_commits()  # that was the last commit of a full answer: there may be more

    # --- emergency mode -------------------------------------------------------------

    def side_weight(self, reachable: frozenset[str] | None = None) -> int:
        """The committee weight on this node's side of a partition: the validators among
        ``reachable`` (None: those heard at this height), itself included. (Rounds of a side without
        a quorum do not advance, so who spoke in the current round says little about who is there.)"""
        side = set(reachable) if reachable is not None else set().union(*self.h.seen_in_round.values())
        return sum(self.committee.weight(did) for did in side | {self.key.did})

    def _maybe_emergency(self, reachable: frozenset[str] | None) -> None:
        h = self.h
        if h.emergency is not None or h.started_ms is None:
            return
        heard, total = self.side_weight(reachable), self.committee.total
        if 2 * heard < total:  # a minority: no decision, not even a provisional one; look again later
            if not h.no_quorum:
                h.no_quorum = True
                self._out.append(NoQuorum(h.number, heard, total))
            self._out.append(Schedule(EMERGENCY, h.number, 0, self._now + self.timeouts.emergency_after_ms))
            return
        h.no_quorum = False
        support: dict[bytes, int] = {}
        for (kind, _), box in h.votes.items():
            if kind == m.PREVOTE:
                for s, said in box.items():
                    for vid in said:
                        if vid is not None:
                            support[vid] = support.get(vid, 0) + self.committee.weight(s)
        by_id = {p.value_id: p.value for props in h.proposals.values() for p in props.values()}
        ranked = sorted(((w, vid) for vid, w in support.items() if vid in by_id), reverse=True)
        block = by_id[ranked[0][1]] if ranked else self._next_block()
        if block is not None:
            h.emergency = block
            self._out.append(Emergency(h.number, block))

    # --- helpers ---

    def _next_block(self) -> bytes | None:
        """The oldest pending values that fit ``block_limits`` and that this node finds valid
        (one it does not yet would spoil the whole block; it waits in ``pending``); None if none."""
        limits, chosen, size = self.block_limits, [], 9  # (an array header takes at most 9 bytes)
        for vid, value in self.pending.items():
            if vid in self.decided_ids or not self._valid(value):
                continue
            size += len(value) + 9  # (so does a byte string's)
            if size > limits.bytes:
                break
            chosen.append(value)
            if len(chosen) >= limits.values:
                break
        return blocks.encode_block(chosen) if chosen else None

    def _announce(self) -> None:
        """The values asked here since the last announcement, as requests (blocks within the wire
        limits: one message unless the burst is very large)."""
        if not self._unannounced:
            return  # (they went out with a vote before the batch's time)
        values = list(dict.fromkeys(self._unannounced))  # (once each, whatever the caller did)
        self._unannounced, self._unannounced_ids = [], set()
        batch, size = [], 9
        for value in values:
            if batch and (len(batch) == blocks.MAX_BLOCK_VALUES or size + len(value) + 9 > blocks.MAX_BLOCK_BYTES):
                self._send_request(batch)
                batch, size = [], 9
            batch.append(value)
            size += len(value) + 9
        if batch:
            self._send_request(batch)
        self._announced_at = self._now

    def _send_request(self, values: list[bytes]) -> None:
        block = blocks.encode_block(values)
        self._send(m.REQUEST, self.h.number, 0, value_id=m.block_id_of(block), value=block)

    def _add_pending(self, value: bytes | None) -> None:
        if value is None or len(self.pending) >= MAX_PENDING:
            return
        vid = m.value_id(value)
        if vid not in self.pending and vid not in self.decided_ids:
            self.pending[vid] = value

    def _vote(self, kind: str, value_id: bytes | None) -> None:
        if self.is_validator:
            self._send(kind, self.h.number, self.h.round, value_id=value_id)

    def _send(self, kind: str, height: int, round_: int, **fields) -> None:
        msg = m.sign(self.key, kind, self.committee.id, height, round_, **fields)
        self._out.append(Broadcast(msg))
        if kind in (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT):
            self._loopback.append(msg)  # our own message counts like anyone's, once this rule is done

    def _schedule(self, step: str) -> None:
        self._out.append(Schedule(step, self.h.number, self.h.round, self._now + self.timeouts.of(step, self.h.round)))

    def _evidence(self, first: m.Message, second: m.Message) -> None:
        if first.sender not in self.equivocators:
            self.equivocators.add(first.sender)
            self._out.append(Evidence(first, second))

    def _flush(self) -> list:
        while self._loopback:
            msg = self._loopback.pop(0)
            if msg.height == self.h.number:
                self._record(msg)
        if self._unannounced and any(type(a) is Broadcast and a.message.kind in _STEPS for a in self._out):
            self._announce()  # values waiting for the batch go with a proposal or vote that goes out anyway
        out, self._out = self._out, []
        return out
