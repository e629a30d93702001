"""Waiting for a peer's identify polls fast at first and then less often, and stops when its
connection closes: a swarm's connections that never identify do not each wake the loop 100
times a second (libp2p_fixes.wait_identified)."""

from __future__ import annotations

import trio
import trio.testing

from meshnode.net import libp2p_fixes


class _Peerstore:
    def __init__(self, identified_after: float | None):
        self.asked, self.identified_after = 0, identified_after

    def get_protocols(self, peer_id):
        self.asked += 1
        due = self.identified_after is not None and trio.current_time() >= self.identified_after
        return ["/meshnode/exchange/1"] if due else []

    def addrs(self, peer_id):
        return ["/ip4/127.0.0.1/tcp/1"]


class _Host:
    def __init__(self, store: _Peerstore):
        self.store = store

    def get_peerstore(self):
        return self.store


def _run(fn, *args):
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_peer_that_never_identifies_costs_a_few_polls_a_second():
    store = _Peerstore(identified_after=None)
    assert _run(libp2p_fixes.wait_identified, _Host(store), "p", 5.0) is False
    # at a fixed 10 ms it was 500; backing off to 250 ms: ~30
    assert store.asked <= 5.0 / libp2p_fixes.IDENTIFY_POLL_MAX_S + 15


def test_a_quick_identify_is_still_seen_within_the_first_polls():
    store = _Peerstore(identified_after=0.012)

    async def main():
        started = trio.current_time()
        assert await libp2p_fixes.wait_identified(_Host(store), "p", 5.0)
        return trio.current_time() - started

    assert _run(main) <= 0.03


def test_a_closed_connection_ends_the_wait():
    store = _Peerstore(identified_after=None)

    async def main():
        started, closed_at = trio.current_time(), trio.current_time() + 0.5
        assert not await libp2p_fixes.wait_identified(_Host(store), "p", 5.0,
                                                      gone=lambda: trio.current_time() >= closed_at)
        return trio.current_time() - started

    assert _run(main) < 1.0
