"""A simulated network: latency, loss, duplication, reordering and partitions.

Every send draws its own latency (log-normal around ``latency_ms``), so
messages overtake each other; a lost message is dropped, a duplicated one
arrives twice. A partition splits the nodes into groups for a time window:
messages between groups are dropped. Broadcast is one send per other node.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable

from sims.engine import Loop


@dataclass
class Partition:
    start_ms: int
    end_ms: int
    groups: list[set[int]]

    def separates(self, a: int, b: int, now: int) -> bool:
        if not self.start_ms <= now < self.end_ms:
            return False
        return not any(a in g and b in g for g in self.groups)


@dataclass
class NetworkModel:
    latency_ms: float = 50.0  # median one-way latency
    jitter: float = 0.5  # sigma of the log-normal
    loss: float = 0.0
    duplication: float = 0.0
    partitions: list[Partition] = field(default_factory=list)


class Network:
    def __init__(self, loop: Loop, rng: random.Random, model: NetworkModel, size: int,
                 deliver: Callable[[int, int, object], None]):
        self.loop, self.rng, self.model, self.size = loop, rng, model, size
        self.deliver = deliver  # deliver(receiver, sender, payload)
        self.sent = self.dropped = self.duplicated = 0

    def send(self, sender: int, receiver: int, payload: object) -> bool:
        """One message on one link; True when it will arrive (at least once)."""
        self.sent += 1
        model, rng = self.model, self.rng
        if model.partitions:
            now = self.loop.now
            if any(p.separates(sender, receiver, now) for p in model.partitions):
                self.dropped += 1
                return False
        if model.loss and rng.random() < model.loss:
            self.dropped += 1
            return False
        copies = 2 if model.duplication and rng.random() < model.duplication else 1
        self.duplicated += copies - 1
        for _ in range(copies):
            delay = round(model.latency_ms * math.exp(rng.gauss(0.0, model.jitter)))
            self.loop.later(delay if delay > 1 else 1, self.deliver, (receiver, sender, payload))
        return True

    def broadcast(self, sender: int, payload: object, to: list[int] | None = None) -> None:
        for receiver in (range(self.size) if to is None else to):
            if receiver != sender:
                self.send(sender, receiver, payload)
