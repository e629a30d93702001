"""Shared GMP test world: fixed keys A (creator), B, C (participants), M (outsider), a fixed clock
and a MemoryHeld that admits what passes. Used by the GMP tests and the vector generator."""

from __future__ import annotations

from meshnode.container import Container, parse_ms
from meshnode.gmp import build
from meshnode.gmp.rules import MemoryHeld, Outcome, admit
from meshnode.identity.keys import NodeKey

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
