"""Shared GMP test world: fixed keys A (creator), B, C (participants), M (outsider), a fixed clock
and a MemoryHeld that admits what passes. Used by the GMP tests and the vector generator."""

from __future__ import annotations

from meshnode.base.container import Container, parse_ms
from meshnode.domain.gmp import build
from meshnode.domain.gmp.rules import MemoryHeld, Outcome, admit
from meshnode.base.identity.keys import NodeKey

T0 = parse_ms("2026-06-01T09:00:00.000Z")
SEEDS = {"A": bytes([0xA1]) * 32, "B": bytes([0xB2]) * 32, "C": bytes([0xC3]) * 32, "M": bytes([0x4D]) * 32}
KEYS = {name: NodeKey(seed) for name, seed in SEEDS.items()}
A, B, C, M = (KEYS[n] for n in "ABCM")
HOUR = 3_600_000


class World:
    """A clock and a holder of admitted containers; ``ok`` asserts admission, ``put`` reports it."""

    def __init__(self, t: int = T0):
        self.t = t
        self.held = MemoryHeld()

    def tick(self, ms: int = 1000) -> int:
        self.t += ms
        return self.t

    def put(self, c: Container) -> Outcome:
        out = admit(c, self.held)
        if out.kind == "admitted":
            self.held.add(c)
        return out

    def ok(self, c: Container) -> Container:
        out = self.put(c)
        assert out.kind == "admitted", (out, c.payload)
        return c

    # builders on the world's clock
    def goal(self, key=A, status="active", participants=(B, C), previous=(), **fields) -> Container:
        payload = {"title": "Ship the bridge", "status": status, **fields}
        if participants:
            payload["participants"] = [k.did for k in participants]
        return build.goal(key, payload, now_ms=self.tick(), previous=[p.did for p in previous])

    def task(self, goal: Container, key=A, status="pending", previous=(), assigned=(), agreed=(), parent=None,
             see_also=(), fields=None, title="build adapter") -> Container:
        payload = {"title": title, "status": status, **(fields or {})}
        if assigned:
            payload["assigned_to"] = [k.did for k in assigned]
            payload.setdefault("next_check_at", self.t + HOUR)
        return build.task(key, payload, now_ms=self.tick(), goal=goal.did, parent_task=parent,
                          previous=[p.did for p in previous], agreed=[a.did for a in agreed],
                          see_also=[s.did for s in see_also])

    def offer(self, lineage: str, version: Container, to=(B,), key=A, expires_ms=HOUR, **fields) -> Container:
        fields = {"task_version": version.did, "candidates": [k.did for k in to], "selection": "direct",
                  "expires_at": self.t + expires_ms, **fields}
        return build.entry(key, "delegation", fields, now_ms=self.tick(), about=lineage,
                           recipients=[k.did for k in to])

    def entry(self, key, kind: str, lineage: str, **fields) -> Container:
        contradicts = fields.pop("contradicts", ())
        see_also = fields.pop("see_also", ())
        return build.entry(key, kind, fields, now_ms=self.tick(), about=lineage, contradicts=contradicts,
                           see_also=see_also)


class Story:
    """The lifecycle up to a held task: goal g (participants B, C), task t1 by A, offer to B, B's
    receipt and acceptance, t2 assigning B, t3 where B starts (in_progress). ``lineage`` = t1's DID."""

    def __init__(self, w: World | None = None):
        self.w = w = w or World()
        self.g = w.ok(w.goal())
        self.t1 = w.ok(w.task(self.g))
        self.lineage = self.t1.did
        self.offer = w.ok(w.offer(self.lineage, self.t1))
        self.receipt = w.ok(w.entry(B, "receipt", self.lineage, received=self.offer.did, received_at=w.t))
        self.acc = w.ok(w.entry(B, "acceptance", self.lineage, offer=self.offer.did))
        self.t2 = w.ok(w.task(self.g, previous=[self.t1], assigned=[B], agreed=[self.acc],
                              fields={"reason": "assigned"}))
        self.check_ms = parse_ms(self.t2.payload["next_check_at"])
        self.t3 = w.ok(self.by(B, [self.t2], status="in_progress", reason="started"))

    def by(self, key, previous, *, assigned=None, agreed=(), see_also=(), **fields) -> Container:
        """A next version of the story's task, signed by ``key``: the fields of previous[0] with ``fields``
        over them (None drops a field); ``assigned``: keys (default: unchanged)."""
        base = {k: v for k, v in previous[0].payload.items() if k not in ("title", "status", "assigned_to")}
        base.update(fields)
        base = {k: v for k, v in base.items() if v is not None}
        status = base.pop("status", previous[0].payload["status"])
        title = base.pop("title", previous[0].payload["title"])
        if assigned is None:
            payload_assigned = list(previous[0].payload.get("assigned_to", ()))
        else:
            payload_assigned = [k.did for k in assigned]
        payload = {"title": title, "status": status, **base}
        if payload_assigned:
            payload["assigned_to"] = payload_assigned
        w = self.w
        return build.task(key, payload, now_ms=w.tick(), goal=self.g.did, previous=[p.did for p in previous],
                          agreed=[a.did for a in agreed], see_also=[s.did for s in see_also])


def contested(w: World, goal: Container, lineage: str, version: Container, candidate, approve: bool = True):
    """A CogConsensus round on a nomination of ``candidate`` (by C, a participant citing ``goal``): votes
    by A, B, C and the result A computes. Returns (nomination, votes, result)."""
    from meshnode.domain.consensus.cogvote import Rule, make_vote, tally
    from meshnode.domain.consensus.result import build_result

    nomination = w.ok(build.entry(C, "delegation", {"task_version": version.did, "candidates": [candidate.did],
                                                    "selection": "cogconsensus", "expires_at": w.t + HOUR,
                                                    "nomination": True},
                                  now_ms=w.tick(), about=lineage, see_also=[goal.did]))
    value = 1 if approve else -1
    votes = [make_vote(k, nomination.did, value, now_ms=w.tick()) for k in (A, B, C)]
    for v in votes:
        w.held.add(v)
    t = tally(votes, nomination.did, trust={k.did: 0.9 for k in (A, B, C)}, at_ms=w.tick(),
              rule=Rule(min_voters=2, half_life_ms=0))
    result = build_result(A, t)
    w.held.add(result)
    return nomination, votes, result
