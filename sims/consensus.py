"""The consensus scenario: a mesh of nodes around a weighted BFT committee of real ``tendermint.Core``s.

The mesh has ``nodes`` nodes; ``committee`` of them (all by default) are
validators, chosen by trust as the epochs choose them
(``committee.weights_from_trust``: identities below the consensus floor get no
weight). The others are clients and gossip relays: a client submits values
(a signed request, gossiped until validators adopt it) and takes decisions
only from signed commits, which its own core checks against the committee
(a quorum of valid precommits); it passes each commit it accepted on to a
few random peers and asks a few peers for commits it lacks every
``client_pull_ms``.

Honest validators run the core unchanged. Byzantine ones run it too (so their
timing is plausible) but misbehave on the way out:

* ``equivocate``: every proposal and vote goes out in two conflicting signed
  versions, one to each half of the committee;
* ``withhold``: nothing goes out at all;
* ``spam``: everything goes out, plus junk and forged messages every 50 ms
  (with clients: also commits for a value only Byzantine precommits sign).

Sybil identities (``--sybils``) are keys with no earned trust, hence no weight
in the committee; they vote for random values on every height. A height
decides a block (a batch of the values asked so far). The safety invariant —
no two honest nodes (validators or clients) commit different blocks at one
height, and no value is in the blocks of two heights — is checked at every
decision, against the first one of that height, which is the same as
checking after every event. ``heights`` values are asked; the run ends when
every one of them is decided everywhere (fewer heights when blocks batch).

Transport: links are reliable once a message arrives, as streams are: a node
never sends a peer a message (the same signed bytes) that peer already has
or has on the way, unless the node publishes it again (the core's periodic
resends; the driver publishes each as a new gossip message,
protocols/consensus.md 3) and the peer is, or was when it got it, at another
height than the message's. A resend is a signal as well as a copy: a vote of
a height its receiver has decided says that its sender is still on it (the
receiver answers with that height's commit, at most once per height every
``resend_ms``); a catch-up asked again can be answered by a peer that has
decided the height since. A copy to a peer that got it at the message's
height and is still there changes nothing (its core counts a message once),
so resends reach only those that lost it (loss, partitions) and those
at other heights. A commit sent in answer to a message (a node behind, a
catch-up request) goes back to its sender only.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field

from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.blocks import encode_block
from meshnode.domain.consensus.committee import Committee, weights_from_trust
from meshnode.domain.consensus.tendermint import (EMERGENCY, Broadcast, Core, Decide, Emergency, Evidence, NoQuorum,
                                                 Schedule, Timeouts)
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.reputation import EQUIVOCATION, apply, evidence_ref, initial, score_at
from meshnode.domain.reputation import Evidence as Observed
from sims.adversaries import Adversaries
from sims.engine import Loop
from sims.network import Network, NetworkModel, Partition

BEHAVIOURS = ("equivocate", "withhold", "spam")
PROPOSE_AND_VOTE = (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT)
KEPT_HEIGHTS = 2  # per-height transport state kept for heights this far below the last one all decided


@dataclass
class Options:
    nodes: int = 16
    byzantine: float = 0.0  # share of the committee's validators (drawn at random)
    behaviour: str = "equivocate"
    sybils: int = 0
    heights: int = 10  # values asked (blocks may decide several at one height)
    seed: int = 1
    latency_ms: float = 50.0
    jitter: float = 0.5
    loss: float = 0.0
    duplication: float = 0.0
    partition: tuple[int, int] | None = None  # (start_ms, end_ms): the honest nodes split in two halves
    isolate: tuple[int, int] | None = None  # (start_ms, end_ms): the first honest validator cut off from all
    relay: int = 2  # an honest node forwards each new proposal or vote to this many random peers (gossip)
    submit_every_ms: int = 100
    max_time_ms: int = 600_000
    committee: int | None = None  # validators among the nodes (None: all, with equal weight)
    client_pull_ms: int = 2000  # a client asks a few peers for commits it may lack this often
    timeouts: Timeouts = field(default_factory=lambda: Timeouts(propose_ms=300, prevote_ms=200, precommit_ms=200,
                                                                delta_ms=200, resend_ms=1000,
                                                                emergency_after_ms=20_000, request_batch_ms=10))


class SafetyViolation(AssertionError):
    pass


@dataclass
class Result:
    options: Options
    decided_heights: int  # heights up to the one that decided the last value asked
    safe: bool
    violation: str | None
    latencies_ms: list[int]  # per height: first honest decision minus when the height could start
    messages_per_height: list[int]
    rounds_per_height: list[int]
    evidence: int  # equivocators exposed by signed evidence (distinct validators)
    emergencies: int
    sent: int
    dropped: int
    rejected: int  # junk or forged messages refused by honest nodes
    sim_time_ms: int
    steps: int
    wall_seconds: float
    trust: list[tuple[int, float, float]] = field(default_factory=list)  # (time, honest mean, byzantine mean)
    validators: int = 0
    byzantine_weight: float = 0.0  # the Byzantine validators' share of the committee's weight
    clients: int = 0
    client_decisions: int = 0  # (client, height) pairs taken from a verified commit, heights up to decided
    client_lag_ms: list[int] = field(default_factory=list)  # per client decision: after the first honest one
    commits_refused: int = 0  # commits for a client's current height that its core did not accept
    suppressed: int = 0  # sends not made: the peer already had those bytes
    decided_values: int = 0  # values asked that the decided heights hold
    values_per_height: list[int] = field(default_factory=list)
    no_quorum: int = 0  # heights an honest node found its side under half the weight (no emergency decision)


class ConsensusSim(Adversaries):
    def __init__(self, options: Options, progress=None):
        self.o = options
        self.rng = random.Random(options.seed)
        self.loop = Loop()
        n = options.nodes
        self.keys = [NodeKey(hashlib.sha256(f"sim-{options.seed}-{i}".encode()).digest())
                     for i in range(n + options.sybils)]
        self.committee = self._choose_committee()
        self.validators = [i for i in range(n) if self.committee.weight(self.keys[i].did) > 0]
        is_validator = set(self.validators)
        self.clients = [i for i in range(n) if i not in is_validator]
        bad = round(len(self.validators) * options.byzantine)
        self.byzantine = set(self.rng.sample(self.validators, bad))
        self.honest = [i for i in self.validators if i not in self.byzantine]  # honest validators
        self.sybils = list(range(n, n + options.sybils))
        self.audience = self.validators  # who gets proposals and votes: the committee's topic
        self._audience_set = frozenset(self.audience)
        self.mesh = list(range(n))
        self.cores = [Core(k, self.committee, timeouts=options.timeouts) for k in self.keys[:n]]
        model = NetworkModel(options.latency_ms, options.jitter, options.loss, options.duplication)
        if options.partition:
            side = self.honest[: len(self.honest) // 2] + self.clients[: len(self.clients) // 2]
            half = set(side) | set(sorted(self.byzantine)[: bad // 2])
            model.partitions.append(Partition(*options.partition, [half, set(range(len(self.keys))) - half]))
        if options.isolate:  # a lone validator: a minority, which must record no decision (consensus.md 6)
            lone = {self.honest[0]}
            model.partitions.append(Partition(*options.isolate, [lone, set(range(len(self.keys))) - lone]))
        self.net = Network(self.loop, self.rng, model, len(self.keys), self._deliver)
        self.progress = progress
        self.first_decision: dict[int, tuple[int, bytes, int]] = {}  # height -> (time, value, round)
        self.decided_count: dict[int, int] = {}  # height -> honest validators that decided it
        self.client_count: dict[int, int] = {}  # height -> clients that took it from a commit
        self.done = 0  # heights every honest validator decided
        self.clients_done = 0  # heights every client took
        self.client_lag: list[int] = []
        self.submitted: dict[bytes, int] = {}
        self.undecided: set[bytes] = set()  # values asked that no height decided yet
        self.decided_at: dict[bytes, int] = {}  # value id -> the height whose block holds it
        self.target: int | None = None  # heights needed: set once every value asked is decided
        self.sent_at_height: dict[int, int] = {}
        self.exposed: set[str] = set()
        self.emergencies = self.no_quorum = self.rejected = self.refused = self.suppressed = 0
        self.violation: str | None = None
        self.trust_points: list[tuple[int, float, float]] = []
        # the honest nodes' view of the validators, by the real reputation model: consensus conduct
        # (a precommit in a decision) and equivocation (signed evidence), applied by every honest
        # node alike, so one view stands for all
        self._scores = {self.keys[i].did: initial(0) for i in self.validators}
        # per height, the transport's memory: signature -> nodes that have (or will get) it -> the
        # height each was at when it was sent to it, and signature -> nodes that relayed it; dropped
        # once every honest validator is past the height
        self._holders: dict[int, dict[bytes, dict[int, int]]] = {}
        self._relayed: dict[int, dict[bytes, set[int]]] = {}
        self._reply_to: int | None = None  # the sender of the message being handled
        self.side_one = set(self.rng.sample(self.honest, len(self.honest) // 2))  # the equivocators' split
        self.sides: tuple[list[int], list[int]] | None = None
        self.forks: dict[bytes, bytes] = {}  # value id -> the id of its forked twin, both ways
        self.fork_side: dict[bytes, int] = {}
        self.forgeries: dict[tuple[int, int], m.Message] = {}

    def _choose_committee(self) -> Committee:
        """All nodes with equal weight; or, with ``committee`` K, K nodes drawn at random get earned
        trust (above the consensus floor) and the rest trust below it, and the committee is what
        the epochs' rule makes of that trust (``weights_from_trust``)."""
        n, k = self.o.nodes, self.o.committee
        if k is None or k >= n:
            return Committee.of({key.did: 1000 for key in self.keys[:n]})
        chosen = set(self.rng.sample(range(n), k))
        trust = {self.keys[i].did: (self.rng.uniform(0.7, 0.9) if i in chosen else self.rng.uniform(0.1, 0.5))
                 for i in range(n)}
        trust.update({key.did: 0.5 for key in self.keys[n:]})  # Sybils: the prior, nothing earned
        return Committee.of(weights_from_trust(trust))

    @property
    def byzantine_weight(self) -> float:
        return sum(self.committee.weight(self.keys[i].did) for i in self.byzantine) / self.committee.total

    # --- running ---------------------------------------------------------------------

    def run(self) -> Result:
        started = time.perf_counter()
        for j in range(self.o.heights):
            self.loop.at(j * self.o.submit_every_ms, self._submit, j)
        for s in self.sybils:
            self.loop.at(self.rng.randrange(1, 500), self._sybil_vote, s)
        if self.o.behaviour == "spam":
            for b in sorted(self.byzantine):
                self.loop.at(self.rng.randrange(1, 50), self._spam, b)
        for c in self.clients:
            self.loop.at(self.rng.randrange(1, self.o.client_pull_ms), self._pull, c)
        self.loop.at(0, self._sample_trust)
        limit, step, shown = self.o.max_time_ms, self.loop.step, -1
        while step():
            if self.violation:
                break
            heights = self.target
            if heights is not None and self.done >= heights and (not self.clients or self.clients_done >= heights):
                break
            if self.loop.now > limit:
                break
            if self.progress and self.done != shown:
                shown = self.done
                self.progress(shown, heights or self.o.heights, self.loop.now)
        return self._result(time.perf_counter() - started)

    def _submit(self, j: int) -> None:
        value = f"decision {j} (seed {self.o.seed})".encode()
        self.submitted[m.value_id(value)] = self.loop.now
        self.undecided.add(m.value_id(value))
        if not self.clients:
            i = self.rng.choice(self.honest)
            self._apply(i, self.cores[i].submit(value, self.loop.now))
            return
        c = self.rng.choice(self.clients)  # a client's signed request, gossiped until validators take it
        block = encode_block([value])
        request = m.sign(self.keys[c], m.REQUEST, self.committee.id, self.cores[c].height, 0,
                         value_id=m.block_id_of(block), value=block)
        self._resubmit(c, request)

    def _resubmit(self, c: int, request: m.Message) -> None:
        """A client gossips its request again every ``resend_ms`` until a commit decides its value
        (gossip from two peers can die out before it meets an honest validator)."""
        if all(m.value_id(v) in self.cores[c].decided_ids for v in m.block_values(request.value)):
            return
        self._gossip(c, request, None)
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(self.o.timeouts.resend_ms, self._resubmit, c, request)

    def _pull(self, c: int) -> None:
        self._apply(c, self.cores[c].join(self.loop.now))
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(self.o.client_pull_ms, self._pull, c)

    # --- transport -------------------------------------------------------------------

    def _spread(self, i: int, msg: m.Message, to, republish: bool = False) -> None:
        """``msg`` from ``i`` to each of ``to`` that does not have it yet; with ``republish`` (``i``'s
        own message, published anew each time) also to each that is, or was when it got it, at
        another height than ``msg``'s (see Transport above)."""
        box = self._holders.setdefault(msg.height, {})
        holders = box.get(msg.signature)
        if holders is None:
            holders = box[msg.signature] = {i: -1}
        cores, send = self.cores, self.net.send
        h = msg.height
        again = {r for r, at in holders.items() if r != i and (at != h or cores[r].height != h)} \
            if republish and len(holders) > 1 else ()
        if to is self.audience:  # a broadcast: the set difference runs in C (ints iterate in a fixed order)
            missing = self._audience_set - holders.keys()
            if again:
                missing.update(r for r in again if r in self._audience_set)
            self.suppressed += len(to) - len(missing) - (i in self._audience_set and i in holders)
            to = missing
        for r in to:
            if r in holders and r not in again:
                if r != i:
                    self.suppressed += 1
            elif send(i, r, msg):
                holders[r] = cores[r].height

    def _gossip(self, i: int, msg: m.Message, exclude: int | None, republish: bool = False) -> None:
        """``msg`` from ``i`` to ``relay`` random nodes of the whole mesh."""
        self._spread(i, msg, [p for p in self._peers(self.mesh) if p != exclude], republish)

    def _peers(self, among: list[int]) -> list[int]:
        """``relay`` distinct nodes drawn at random from ``among`` (two draws for the usual two,
        much cheaper than ``random.sample``)."""
        n, k = len(among), self.o.relay
        if k != 2 or n < 2:
            return self.rng.sample(among, min(k, n))
        rnd = self.rng.random
        a, b = int(rnd() * n), int(rnd() * (n - 1))
        return [among[a], among[b + (b >= a)]]

    def _first_sighting(self, receiver: int, msg: m.Message) -> bool:
        box = self._relayed.setdefault(msg.height, {})
        relayed = box.get(msg.signature)
        if relayed is None:
            box[msg.signature] = {receiver}
            return True
        if receiver in relayed:
            return False
        relayed.add(receiver)
        return True

    def _deliver(self, receiver: int, sender: int, payload) -> None:
        if receiver >= len(self.cores):
            return  # Sybils only talk
        bad = receiver in self.byzantine
        if bad and self.o.behaviour == "withhold":
            return
        if isinstance(payload, bytes):  # junk and forgeries travel as bytes: the real decoder judges them
            try:
                payload = m.decode(payload)
            except m.MessageError:
                if not bad:
                    self.rejected += 1
                return
        core, kind = self.cores[receiver], payload.kind
        if kind in PROPOSE_AND_VOTE:
            if self.o.relay and not bad and self._first_sighting(receiver, payload):
                self._spread(receiver, payload, [p for p in self._peers(self.audience) if p != sender])
        elif kind == m.REQUEST and self.clients and self.committee.weight(payload.sender) == 0:
            if not bad and self._first_sighting(receiver, payload):
                self._gossip(receiver, payload, sender)  # a client's request: passed on through the mesh
            for value in m.block_values(payload.value):
                vid = m.value_id(value)
                if core.is_validator and not bad and vid not in core.pending and vid not in core.decided_ids:
                    self._apply(receiver, core.submit(value, self.loop.now))  # a validator takes it up
            return
        self._reply_to = sender
        actions = core.receive(payload, self.loop.now)
        self._reply_to = None
        if kind == m.COMMIT and not core.is_validator:
            if any(isinstance(a, Decide) for a in actions):
                self._gossip(receiver, payload, sender)  # a commit a client accepted: passed on
            elif payload.height == core.height:
                self.refused += 1  # a commit for the height the client waits for, and not a valid one
        self._apply(receiver, actions, sender)

    def _apply(self, i: int, actions: list, sender: int | None = None) -> None:
        for a in actions:
            if isinstance(a, Broadcast):
                self._publish(i, a.message, sender)
            elif isinstance(a, Schedule):
                self.loop.at(a.at_ms, self._timer, i, a)
            elif isinstance(a, Decide):
                self._decided(i, a)
            elif isinstance(a, Evidence):
                if i not in self.byzantine and a.first.sender not in self.exposed:
                    self.exposed.add(a.first.sender)
                    self._observe(a.first.sender, Observed(EQUIVOCATION, self.loop.now,
                                                           ref=evidence_ref(a.first.encode())))
            elif isinstance(a, Emergency) and i not in self.byzantine:
                self.emergencies += 1
            elif isinstance(a, NoQuorum) and i not in self.byzantine:
                self.no_quorum += 1

    def _timer(self, i: int, s: Schedule) -> None:
        reachable = self._reachable(i) if s.step == EMERGENCY else None
        self._apply(i, self.cores[i].timeout(s.step, s.height, s.round, self.loop.now, reachable))

    def _reachable(self, i: int) -> frozenset[str]:
        """The nodes no partition separates from ``i`` now (a node's live connections)."""
        now, partitions = self.loop.now, self.net.model.partitions
        return frozenset(self.keys[j].did for j in range(len(self.cores))
                         if j != i and not any(p.separates(i, j, now) for p in partitions))

    def _publish(self, i: int, msg: m.Message, sender: int | None = None) -> None:
        self.sent_at_height[msg.height] = self.sent_at_height.get(msg.height, 0) + 1
        if i in self.byzantine:
            if self.o.behaviour == "withhold":
                return
            if self.o.behaviour == "equivocate" and msg.kind in PROPOSE_AND_VOTE:
                self._equivocate(i, msg)
                return
        if msg.kind == m.COMMIT and sender is not None:
            self._spread(i, msg, (sender,), republish=True)  # an answer: to the node that is behind or asked
        elif msg.kind == m.CATCHUP and not self.cores[i].is_validator:
            self._gossip(i, msg, None, republish=True)  # a client asks a few peers
        else:
            self._spread(i, msg, self.audience, republish=True)

    # --- checks and measures -----------------------------------------------------------

    def _decided(self, i: int, d: Decide) -> None:
        """The safety check, at every decision of an honest node: the same block as the first
        honest decision of that height (O(1), and nothing else can break safety), and, at a
        height's first decision, none of its values decided at another height."""
        if i in self.byzantine:
            return
        now = self.loop.now
        first = self.first_decision.get(d.height)
        if first is None:
            self.first_decision[d.height] = (now, d.block, d.round)
            self._first_of_height(d)
            for p in d.precommits:  # validators whose precommit made the decision: agreement evidence
                if p.sender in self._scores:
                    self._observe(p.sender, Observed("consensus_ok", now, ref=f"height {d.height}"))
        elif first[1] != d.block:
            self.violation = (f"height {d.height}: node {i} committed {d.values[:3]!r}, another honest node "
                              f"{m.block_values(first[1])[:3]!r}")
        if not self.cores[i].is_validator:
            self.client_count[d.height] = self.client_count.get(d.height, 0) + 1
            self.client_lag.append(now - (first[0] if first else now))
            if self.client_count[d.height] == len(self.clients) and d.height == self.clients_done:
                while self.client_count.get(self.clients_done, 0) == len(self.clients):
                    self.clients_done += 1
                self._forget()
            return
        if (self.target is None or d.height < self.target) and not d.from_commit and self.clients:
            # an honest validator that decided hands the signed commit to a few clients
            commit = self.cores[i].commit_message(d.height)
            self.sent_at_height[d.height] = self.sent_at_height.get(d.height, 0) + 1
            self._spread(i, commit, self._peers(self.clients))
        self.decided_count[d.height] = self.decided_count.get(d.height, 0) + 1
        if self.decided_count[d.height] == len(self.honest) and d.height == self.done:
            while self.decided_count.get(self.done, 0) == len(self.honest):
                self.done += 1
            self._forget()

    def _first_of_height(self, d: Decide) -> None:
        for v in d.values:
            vid = m.value_id(v)
            if self.decided_at.setdefault(vid, d.height) != d.height:
                self.violation = f"{v[:40]!r} decided at heights {self.decided_at[vid]} and {d.height}"
            self.undecided.discard(vid)
        if self.target is None and not self.undecided and len(self.submitted) == self.o.heights:
            self.target = max(self.decided_at[vid] for vid in self.submitted) + 1

    def _forget(self) -> None:
        """Drop the transport's memory of heights every honest node (validators and clients) is
        past, but the last ``KEPT_HEIGHTS``: what is sent for those later is rare (a node far
        behind), and then merely not deduplicated."""
        below = min(self.done, self.clients_done) if self.clients else self.done
        for box in (self._holders, self._relayed):
            for h in [h for h in box if h < below - KEPT_HEIGHTS]:
                del box[h]

    def _observe(self, did: str, evidence: Observed) -> None:
        self._scores[did] = apply(self._scores[did], evidence)

    def _sample_trust(self) -> None:
        now = self.loop.now
        honest = [score_at(self._scores[self.keys[i].did], now) for i in self.honest]
        bad = [score_at(self._scores[self.keys[i].did], now) for i in self.byzantine]
        self.trust_points.append((self.loop.now, sum(honest) / len(honest), sum(bad) / len(bad) if bad else float("nan")))
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(250, self._sample_trust)

    def _result(self, wall: float) -> Result:
        heights = min(self.done, self.target if self.target is not None else self.done)
        latencies, previous = [], 0
        for h in range(heights):  # from when the height could start: a value of it asked, the last one decided
            t, block, _ = self.first_decision[h]
            asked = min((self.submitted.get(m.value_id(v), t) for v in m.block_values(block)), default=t)
            latencies.append(t - max(asked, previous))
            previous = t
        held = [m.block_values(self.first_decision[h][1]) for h in range(heights)]
        return Result(
            options=self.o, decided_heights=heights, safe=self.violation is None, violation=self.violation,
            latencies_ms=latencies, messages_per_height=[self.sent_at_height.get(h, 0) for h in range(heights)],
            rounds_per_height=[self.first_decision[h][2] for h in range(heights)],
            evidence=len(self.exposed), emergencies=self.emergencies, sent=self.net.sent, dropped=self.net.dropped,
            rejected=self.rejected, sim_time_ms=self.loop.now, steps=self.loop.steps, wall_seconds=wall,
            trust=self.trust_points, validators=len(self.validators), byzantine_weight=self.byzantine_weight,
            clients=len(self.clients), client_decisions=sum(self.client_count.get(h, 0) for h in range(heights)),
            client_lag_ms=self.client_lag, commits_refused=self.refused, suppressed=self.suppressed,
            decided_values=sum(m.value_id(v) in self.submitted for vs in held for v in vs),
            values_per_height=[len(vs) for vs in held], no_quorum=self.no_quorum)
