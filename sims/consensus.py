"""The consensus scenario: a weighted BFT committee of real ``tendermint.Core``s.

Honest validators run the core unchanged. Byzantine ones run it too (so their
timing is plausible) but misbehave on the way out:

* ``equivocate``: every proposal and vote goes out in two conflicting signed
  versions, one to each half of the mesh;
* ``withhold``: nothing goes out at all;
* ``spam``: everything goes out, plus junk and forged messages every 50 ms.

Sybil identities (``--sybils``) are keys with no earned trust, hence no weight
in the committee; they vote for random values on every height. The safety
invariant — no two honest nodes commit different values at one height — is
checked after every event; a violation stops the run and is reported.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field

from meshnode.consensus import messages as m
from meshnode.consensus.committee import Committee
from meshnode.consensus.tendermint import Broadcast, Core, Decide, Emergency, Evidence, Schedule, Timeouts
from meshnode.identity.keys import NodeKey
from meshnode.reputation import EQUIVOCATION, apply, evidence_ref, initial, score_at
from meshnode.reputation import Evidence as Observed
from sims.engine import Loop
from sims.network import Network, NetworkModel, Partition

BEHAVIOURS = ("equivocate", "withhold", "spam")


@dataclass
class Options:
    nodes: int = 16
    byzantine: float = 0.0  # share of validators (and of weight: all weigh the same)
    behaviour: str = "equivocate"
    sybils: int = 0
    heights: int = 10
    seed: int = 1
    latency_ms: float = 50.0
    jitter: float = 0.5
    loss: float = 0.0
    duplication: float = 0.0
    partition: tuple[int, int] | None = None  # (start_ms, end_ms): the honest nodes split in two halves
    relay: int = 2  # an honest node forwards each new proposal or vote to this many random peers (gossip)
    submit_every_ms: int = 100
    max_time_ms: int = 600_000
    timeouts: Timeouts = field(default_factory=lambda: Timeouts(propose_ms=300, prevote_ms=200, precommit_ms=200,
                                                                delta_ms=200, resend_ms=1000,
                                                                emergency_after_ms=20_000))


class SafetyViolation(AssertionError):
    pass


@dataclass
class Result:
    options: Options
    decided_heights: int
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


class ConsensusSim:
    def __init__(self, options: Options, progress=None):
        self.o = options
        self.rng = random.Random(options.seed)
        self.loop = Loop()
        n = options.nodes
        self.keys = [NodeKey(hashlib.sha256(f"sim-{options.seed}-{i}".encode()).digest())
                     for i in range(n + options.sybils)]
        self.committee = Committee.of({k.did: 1000 for k in self.keys[:n]})
        bad = round(n * options.byzantine)
        self.byzantine = set(self.rng.sample(range(n), bad))
        self.honest = [i for i in range(n) if i not in self.byzantine]
        self.sybils = list(range(n, n + options.sybils))
        self.cores = [Core(k, self.committee, timeouts=options.timeouts) for k in self.keys[:n]]
        model = NetworkModel(options.latency_ms, options.jitter, options.loss, options.duplication)
        if options.partition:
            half = set(self.honest[: len(self.honest) // 2]) | set(sorted(self.byzantine)[: bad // 2])
            model.partitions.append(Partition(*options.partition, [half, set(range(len(self.keys))) - half]))
        self.net = Network(self.loop, self.rng, model, len(self.keys), self._deliver)
        self.progress = progress
        self.first_decision: dict[int, tuple[int, bytes, int]] = {}  # height -> (time, value, round)
        self.decided_by: dict[int, set[int]] = {}
        self.submitted: dict[bytes, int] = {}
        self.sent_at_height: dict[int, int] = {}
        self.exposed: set[str] = set()
        self.emergencies = 0
        self.rejected = 0
        self.violation: str | None = None
        self.trust_points: list[tuple[int, float, float]] = []
        # the honest nodes' view of the validators, by the real reputation model: consensus conduct
        # (a precommit in a decision) and equivocation (signed evidence), applied by every honest
        # node alike, so one view stands for all
        self._scores = {k.did: initial(0) for k in self.keys[:n]}
        self._seen: list[set[bytes]] = [set() for _ in range(n)]  # signatures each node has relayed
        self.side_one = set(self.rng.sample(self.honest, len(self.honest) // 2))  # the equivocators' split
        self.forks: dict[bytes, bytes] = {}  # value id -> the id of its forked twin, both ways
        self.fork_side: dict[bytes, int] = {}

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
        self.loop.at(0, self._sample_trust)
        last_shown = -1
        while self.loop.step():
            if self.violation:
                break
            done = self._done_heights()
            if done >= self.o.heights or self.loop.now > self.o.max_time_ms:
                break
            if self.progress and done != last_shown:
                last_shown = done
                self.progress(done, self.o.heights, self.loop.now)
        return self._result(time.perf_counter() - started)

    def _done_heights(self) -> int:
        count = 0
        while len(self.decided_by.get(count, ())) == len(self.honest):
            count += 1
        return count

    def _submit(self, j: int) -> None:
        i = self.rng.choice(self.honest)
        value = f"decision {j} (seed {self.o.seed})".encode()
        self.submitted[m.value_id(value)] = self.loop.now
        self._apply(i, self.cores[i].submit(value, self.loop.now))

    # --- messages --------------------------------------------------------------------

    def _deliver(self, receiver: int, sender: int, payload) -> None:
        if receiver in self.byzantine and self.o.behaviour == "withhold":
            return
        if receiver >= len(self.cores):
            return  # Sybils only talk
        if isinstance(payload, bytes):  # junk and forgeries travel as bytes: the real decoder judges them
            try:
                payload = m.decode(payload)
            except m.MessageError:
                if receiver not in self.byzantine:
                    self.rejected += 1
                return
        if (self.o.relay and receiver not in self.byzantine and payload.kind in (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT)
                and payload.signature not in self._seen[receiver]):
            self._seen[receiver].add(payload.signature)  # gossip: pass a first sighting on to a few peers
            peers = self.rng.sample(range(len(self.cores)), min(self.o.relay, len(self.cores)))
            self.net.broadcast(receiver, payload, [p for p in peers if p not in (receiver, sender)])
        self._apply(receiver, self.cores[receiver].receive(payload, self.loop.now))

    def _apply(self, i: int, actions: list) -> None:
        for a in actions:
            if isinstance(a, Broadcast):
                self._publish(i, a.message)
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

    def _timer(self, i: int, s: Schedule) -> None:
        self._apply(i, self.cores[i].timeout(s.step, s.height, s.round, self.loop.now))

    def _publish(self, i: int, msg: m.Message) -> None:
        self.sent_at_height[msg.height] = self.sent_at_height.get(msg.height, 0) + 1
        if i in self.byzantine:
            if self.o.behaviour == "withhold":
                return
            if self.o.behaviour == "equivocate" and msg.kind in (m.PROPOSAL, m.PREVOTE, m.PRECOMMIT):
                self._equivocate(i, msg)
                return
        self.net.broadcast(i, msg)

    def _equivocate(self, i: int, msg: m.Message) -> None:
        """The colluding equivocators' attack: the honest nodes are split into two fixed sides;
        a Byzantine proposer proposes one value to each side, and every Byzantine vote goes
        to each side for that side's value (or, for values not forked, once as sent and once
        for something else), so each side sees what it would need to commit its own value."""
        key, others = self.keys[i], [j for j in range(len(self.keys)) if j != i]
        side_one = [j for j in others if j in self.side_one or j in self.byzantine]
        side_two = [j for j in others if j not in self.side_one and j not in self.byzantine]
        if msg.kind == m.PROPOSAL:
            value = msg.value + b" (forked)"
            twin = m.sign(key, m.PROPOSAL, msg.committee, msg.height, msg.round, value_id=m.value_id(value),
                          valid_round=msg.valid_round, value=value)
            self.forks[msg.value_id], self.forks[twin.value_id] = twin.value_id, msg.value_id
            self.fork_side[msg.value_id], self.fork_side[twin.value_id] = 1, 2
            self.net.broadcast(i, msg, side_one)
            self.net.broadcast(i, twin, side_two)
            return
        partner = self.forks.get(msg.value_id)
        if partner is None:
            partner = None if msg.value_id is not None else hashlib.sha256(b"fork" + msg.signature).digest()
        twin = m.sign(key, msg.kind, msg.committee, msg.height, msg.round, value_id=partner)
        first, second = (msg, twin) if self.fork_side.get(msg.value_id, 1) == 1 else (twin, msg)
        self.net.broadcast(i, first, side_one)
        self.net.broadcast(i, second, side_two)

    def _sybil_vote(self, s: int) -> None:
        height = self._done_heights()
        for kind in (m.PREVOTE, m.PRECOMMIT):
            vote = m.sign(self.keys[s], kind, self.committee.id, height, 0,
                          value_id=hashlib.sha256(self.rng.randbytes(8)).digest())
            self.net.broadcast(s, vote)
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(500, self._sybil_vote, s)

    def _spam(self, b: int) -> None:
        junk = [self.rng.randbytes(self.rng.randrange(1, 200))]
        forged = m.sign(self.keys[b], m.PREVOTE, self.committee.id, self._done_heights(), 0)
        victim = self.keys[self.rng.choice(self.honest)].did  # a vote that claims to be someone else's
        junk.append(m.Message(forged.kind, forged.committee, forged.height, forged.round, victim,
                              signature=forged.signature).encode())
        for payload in junk:
            self.net.broadcast(b, payload)
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(50, self._spam, b)

    # --- checks and measures -----------------------------------------------------------

    def _decided(self, i: int, d: Decide) -> None:
        if i in self.byzantine:
            return
        first = self.first_decision.get(d.height)
        if first is None:
            self.first_decision[d.height] = (self.loop.now, d.value, d.round)
            for p in d.precommits:  # validators whose precommit made the decision: agreement evidence
                if p.sender in self._scores:
                    self._observe(p.sender, Observed("consensus_ok", self.loop.now, ref=f"height {d.height}"))
        elif first[1] != d.value:
            self.violation = (f"height {d.height}: node {i} committed {d.value[:40]!r}, another honest node "
                              f"{first[1][:40]!r}")
        self.decided_by.setdefault(d.height, set()).add(i)

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
        heights = self._done_heights()
        latencies, previous = [], 0
        for h in range(heights):  # from when the height could start: its value submitted, the last one decided
            t, value, _ = self.first_decision[h]
            latencies.append(t - max(self.submitted.get(m.value_id(value), t), previous))
            previous = t
        return Result(
            options=self.o, decided_heights=heights, safe=self.violation is None, violation=self.violation,
            latencies_ms=latencies, messages_per_height=[self.sent_at_height.get(h, 0) for h in range(heights)],
            rounds_per_height=[self.first_decision[h][2] for h in range(heights)],
            evidence=len(self.exposed), emergencies=self.emergencies, sent=self.net.sent, dropped=self.net.dropped,
            rejected=self.rejected, sim_time_ms=self.loop.now, steps=self.loop.steps, wall_seconds=wall,
            trust=self.trust_points)
