"""The reactor core: events and run outcomes in, decisions, jobs, checks and escalations out.

Sans-IO (design 2): ``step(now_ms, inputs)`` never reads a clock, a file or the store.
"""

from __future__ import annotations

from typing import Iterable

from meshnode.reactor.aliases import AliasRegistry
from meshnode.reactor.settings import ReactorConfig
from meshnode.reactor.types import Input, ReactorState, StateDelta, Step

__all__ = ["Reactor", "Step", "StateDelta", "ReactorState"]


class Reactor:
    def __init__(self, cfg: ReactorConfig, aliases: AliasRegistry, state: ReactorState | None = None) -> None:
        self.cfg = cfg
        self.aliases = aliases
        self._state = state or ReactorState()

    def step(self, now_ms: int, inputs: Iterable[Input]) -> Step:
        raise NotImplementedError

    def state(self) -> ReactorState:
        return self._state

    def may_send(self, src: str, dst: str, thread: str, now_ms: int) -> bool:
        raise NotImplementedError

    def set_aliases(self, aliases: AliasRegistry) -> None:
        self.aliases = aliases
