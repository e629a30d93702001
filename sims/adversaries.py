"""What the Byzantine validators and the Sybils of the consensus scenario do.

A mixin of ``ConsensusSim``: it uses the scenario's keys, committee, network
and transport (``_spread``), and adds nothing to the honest nodes' behaviour.
"""

from __future__ import annotations

import hashlib

from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.blocks import encode_block


class Adversaries:
    def _equivocate(self, i: int, msg: m.Message) -> None:
        """The colluding equivocators' attack: the honest validators are split into two fixed sides;
        a Byzantine proposer proposes one value to each side, and every Byzantine vote goes
        to each side for that side's value (or, for values not forked, once as sent and once
        for something else), so each side sees what it would need to commit its own value."""
        key = self.keys[i]
        if not self.sides:  # the two sides, in the audience's order, drawn once
            self.sides = ([j for j in self.audience if j in self.side_one or j in self.byzantine],
                          [j for j in self.audience if j not in self.side_one and j not in self.byzantine])
        side_one = [j for j in self.sides[0] if j != i]
        side_two = self.sides[1]
        if msg.kind == m.PROPOSAL:  # the twin block: the same values, the last one altered
            values = m.block_values(msg.value)
            block = encode_block(values[:-1] + (values[-1] + b" (forked)",))
            twin = m.sign(key, m.PROPOSAL, msg.committee, msg.height, msg.round, value_id=m.block_id_of(block),
                          valid_round=msg.valid_round, value=block)
            self.forks[msg.value_id], self.forks[twin.value_id] = twin.value_id, msg.value_id
            self.fork_side[msg.value_id], self.fork_side[twin.value_id] = 1, 2
            self._spread(i, msg, side_one)
            self._spread(i, twin, side_two)
            return
        partner = self.forks.get(msg.value_id)
        if partner is None:
            partner = None if msg.value_id is not None else hashlib.sha256(b"fork" + msg.signature).digest()
        twin = m.sign(key, msg.kind, msg.committee, msg.height, msg.round, value_id=partner)
        first, second = (msg, twin) if self.fork_side.get(msg.value_id, 1) == 1 else (twin, msg)
        self._spread(i, first, side_one)
        self._spread(i, second, side_two)

    def _sybil_vote(self, s: int) -> None:
        height = self.done
        for kind in (m.PREVOTE, m.PRECOMMIT):
            vote = m.sign(self.keys[s], kind, self.committee.id, height, 0,
                          value_id=hashlib.sha256(self.rng.randbytes(8)).digest())
            self._spread(s, vote, self.audience)
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(500, self._sybil_vote, s)

    def _spam(self, b: int) -> None:
        junk = [self.rng.randbytes(self.rng.randrange(1, 200))]
        forged = m.sign(self.keys[b], m.PREVOTE, self.committee.id, self.done, 0)
        victim = self.keys[self.rng.choice(self.honest)].did  # a vote that claims to be someone else's
        junk.append(m.Message(forged.kind, forged.committee, forged.height, forged.round, victim,
                              signature=forged.signature).encode())
        for payload in junk:
            self.net.broadcast(b, payload, self.audience)
        if self.clients:  # and commits no quorum signed, to clients that would take a decision from them
            for target in self.rng.sample(self.clients, min(self.o.relay, len(self.clients))):
                self.net.send(b, target, self._forged_commit(b, self.cores[target].height))
        if self.loop.now < self.o.max_time_ms:
            self.loop.after(50, self._spam, b)

    def _forged_commit(self, b: int, height: int) -> m.Message:
        """A commit of a value no honest validator voted for, carrying the precommits of every
        Byzantine validator (less than a third of the weight: no quorum), signed by ``b``."""
        made = self.forgeries.get((b, height))
        if made is None:  # made once per height (signing is the cost), a spammer sends it every 50 ms
            value = encode_block([f"forged {height} by {b}".encode()])
            vid = m.block_id_of(value)
            precommits = tuple(m.sign(self.keys[j], m.PRECOMMIT, self.committee.id, height, 0,
                                      value_id=vid).encode() for j in sorted(self.byzantine))
            made = self.forgeries[(b, height)] = m.sign(self.keys[b], m.COMMIT, self.committee.id, height, 0,
                                                        value_id=vid, value=value, commit=precommits)
        return made
