"""The consensus driver (net/mesh_consensus.py) in process, with the store and the mesh left out:
what it does when the core fails, and with the decisions it has not stored yet."""

from __future__ import annotations

import trio
import trio.testing

from meshnode.consensus.tendermint import PROPOSE, Schedule
from meshnode.metrics import Metrics
from meshnode.net.mesh_consensus import ConsensusMixin


class _Failing:
    def timeout(self, step, height, round_, now):
        raise ValueError("a bug in the core")


class _Driver(ConsensusMixin):
    def __init__(self) -> None:
        self.metrics = Metrics()


async def test_a_core_timer_that_raises_is_counted_and_the_timers_go_on():
    d = _Driver()
    d.core = _Failing()
    d._timers = [(0, 1, d.core, Schedule(PROPOSE, 0, 0, 0)), (0, 2, d.core, Schedule(PROPOSE, 0, 0, 0))]
    d._timers_changed = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(d._consensus_timers)
        await trio.testing.wait_all_tasks_blocked()
        assert d.metrics.get("consensus_core_errors", step="timeout") == 2
        assert not d._timers
        nursery.cancel_scope.cancel()
