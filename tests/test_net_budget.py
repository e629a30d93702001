"""CPU budgets per peer, address and subnet; limits per address; weighted standing (pure parts)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from meshnode.net.addresses import AddressGuard, AddressLimits
from meshnode.net.budget import BoundedLRU, BudgetLimits, CpuBudgets, OverBudget, estimate_ms, subnet_of
from meshnode.net.standing import PeerLimits, Standing, invalid_weight

T0 = 1_700_000_000_000
LIMITS = BudgetLimits(ms_per_second=100, burst_ms=1000, known_factor=10, address_factor=2, subnet_factor=3,
                      strangers_ms_per_second=100_000, strangers_burst_ms=1_000_000)  # shared: out of the way here


def test_subnets_are_slash_24_and_slash_48():
    assert subnet_of("203.0.113.77") == "203.0.113.0/24"
    assert subnet_of("2001:db8:1:2:3::4") == "2001:db8:1::/48"
    assert subnet_of("::ffff:203.0.113.77") == "203.0.113.0/24"
    assert subnet_of("127.0.0.1") == "127.0.0.0/24"
    assert subnet_of("not-an-ip") == "not-an-ip"


def test_charged_before_the_work_then_settled_at_its_cost():
    budgets = CpuBudgets(LIMITS)
    charge = budgets.admit("p", "10.0.0.1", False, 600, T0)
    assert charge.keys == ("peer:p", "addr:10.0.0.1", "net:10.0.0.0/24", "strangers")
    with pytest.raises(OverBudget) as refused:  # 400 left of 1000: a second estimate of 600 waits
        budgets.admit("p", "10.0.0.1", False, 600, T0)
    assert refused.value.key == "peer:p" and 1900 <= refused.value.retry_ms <= 2100  # 200 ms at 100 ms/s
    budgets.settle(charge, 50, T0)  # the work cost 50 ms, not 600: refunded
    budgets.admit("p", "10.0.0.1", False, 600, T0)
    assert budgets.spent("p", T0) == pytest.approx(650)
    assert budgets.spent("p", T0 + 10_000) == 0  # refilled at 100 ms/s, capped at the burst


def test_work_larger_than_a_burst_is_done_once_then_paid_back():
    budgets = CpuBudgets(LIMITS)
    charge = budgets.admit("p", None, False, 5000, T0)  # a full bucket pays for anything once
    budgets.settle(charge, 3000, T0)
    with pytest.raises(OverBudget):
        budgets.admit("p", None, False, 1, T0 + 10_000)  # 3000 of debt, 1000 repaid
    budgets.admit("p", None, False, 1, T0 + 30_001)


def test_a_peer_or_address_in_debt_is_told_how_long_before_its_input_is_read_again():
    budgets = CpuBudgets(LIMITS)
    assert budgets.in_debt("p", "10.0.0.1", False, T0) is None  # never charged: nothing to owe
    charge = budgets.admit("p", "10.0.0.1", False, 100, T0)
    budgets.settle(charge, 1500, T0)  # the peer's 1000 ms burst overspent by 500 ms
    assert 4900 <= budgets.in_debt("p", "10.0.0.1", False, T0) <= 5100  # 500 ms at 100 ms/s
    assert budgets.in_debt("fresh", "10.0.0.1", False, T0) is None  # the address (2x) is not in debt
    assert budgets.in_debt("p", "10.0.0.1", False, T0 + 5100) is None  # paid back


def test_many_identities_of_one_address_share_its_budget_and_subnet():
    budgets = CpuBudgets(LIMITS)
    for i in range(2):  # the address holds 2000: two fresh identities spend it
        budgets.admit(f"sybil{i}", "10.0.0.1", False, 1000, T0)
    with pytest.raises(OverBudget) as refused:
        budgets.admit("sybil2", "10.0.0.1", False, 10, T0)
    assert refused.value.key == "addr:10.0.0.1"
    budgets.admit("other", "10.0.0.2", False, 900, T0)  # the subnet holds 3000: 2900 spent
    with pytest.raises(OverBudget) as refused:
        budgets.admit("next", "10.0.0.3", False, 200, T0)
    assert refused.value.key == "net:10.0.0.0/24"
    budgets.admit("friend", "10.0.0.1", True, 5000, T0)  # a known peer: its own, larger budget alone
    budgets.admit("elsewhere", "10.0.1.1", False, 500, T0)  # another subnet is not held to this one


def test_pressure_is_relative_and_counts_the_address_of_fresh_identities():
    budgets = CpuBudgets(LIMITS)
    budgets.admit("friend", "10.0.0.9", True, 500, T0)  # half a burst of 1000, of a budget of 10,000
    budgets.admit("stranger", "10.0.1.1", False, 500, T0)  # half of its 1000
    assert budgets.pressure("friend", T0) < budgets.pressure("stranger", T0)  # the friend is the thrifty one
    for i in range(4):  # identities made up at one address, each spending 450 of its own 1000
        budgets.admit(f"fresh{i}", "10.0.2.1", False, 450, T0)
    assert budgets.pressure("fresh4-never-seen", T0) == 0
    budgets.admit("fresh4", "10.0.2.1", False, 1, T0)  # new, nearly nothing spent on its own key
    assert budgets.pressure("fresh4", T0) > budgets.pressure("stranger", T0)  # its address spent 1801 of 2000


def test_a_peer_that_becomes_known_gets_the_larger_budget():
    budgets = CpuBudgets(LIMITS)
    budgets.admit("p", None, False, 1000, T0)
    with pytest.raises(OverBudget):
        budgets.admit("p", None, False, 500, T0)
    budgets.admit("p", None, True, 500, T0 + 1000)  # 100 refilled at 10x the rate: 1000 ms


def test_a_stranger_in_debt_that_becomes_known_is_read_again_at_once():
    budgets = CpuBudgets(LIMITS)
    charge = budgets.admit("p", None, False, 100, T0)
    budgets.settle(charge, 1500, T0)  # 500 ms of debt as a stranger
    assert budgets.in_debt("p", None, False, T0) is not None
    assert budgets.in_debt("p", None, True, T0) is None  # a friend now: its larger burst covers it


def test_estimates_grow_with_size_and_items():
    assert estimate_ms(0) > 0 and estimate_ms(1 << 20) > 50 * estimate_ms(1024)
    assert estimate_ms(8041, 7533) >= 10  # 8 KiB of empty arrays took 11.9 ms; by bytes alone ~1 ms


def test_the_tables_are_bounded():
    budgets = CpuBudgets(BudgetLimits(max_keys=50))
    for i in range(1000):
        budgets.admit(f"p{i}", f"10.{i // 256}.{i % 256}.1", False, 1, T0)
    assert len(budgets) <= 150
    standing = Standing(PeerLimits(max_peers=100, invalid_threshold=3))
    standing.restore_ban("banned", T0 + 60_000, T0)
    assert standing.begin_request("busy", T0)
    for i in range(1000):
        standing.record_invalid(f"p{i}", "bad", T0)
    assert len(standing) <= 102
    assert standing.is_banned("banned", T0 + 1)  # a ban is never forgotten for room
    assert "busy" in standing.peers()  # nor a peer with a request running


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["get", "put", "put"]), st.integers(0, 30), st.booleans()), max_size=300))
def test_bounded_lru_is_bounded_and_forgets_what_it_must_keep_only_when_nothing_else_may_go(ops):
    lru = BoundedLRU(8, may_forget=lambda v, now_ms: not v)
    pinned = set()
    for op, key, pin in ops:
        forced = lru.forced
        if op == "get":
            lru.get(str(key))
        else:
            lru.put(str(key), pin)
            (pinned.add if pin else pinned.discard)(str(key))
            assert str(key) in lru  # the newcomer is never the one forgotten
        if lru.forced > forced:  # only when every other entry was pinned
            assert len(pinned - {str(key)}) >= 8
            pinned &= set(lru.keys())
        assert pinned <= set(lru.keys())
        assert len(lru) <= 8


def test_a_table_full_of_bans_still_limits_and_cuts_off_a_new_peer():
    standing = Standing(PeerLimits(max_peers=64, invalid_threshold=2, ban_ms=60_000))
    for i in range(64):
        standing.restore_ban(f"banned{i}", T0 + 60_000, T0)
    cut = [standing.record_invalid("new", "bad", T0 + 1) for _ in range(5)]
    assert cut == [False, True, False, False, False]  # cut off at the threshold, as with room in the table
    assert standing.is_banned("new", T0 + 2)
    assert len(standing) <= 64
    busy = Standing(PeerLimits(max_peers=4, max_outstanding=1))
    for i in range(4):
        assert busy.begin_request(f"busy{i}", T0)
    assert busy.begin_request("new", T0) and not busy.begin_request("new", T0)  # its outstanding limit holds


def test_ended_bans_and_old_cutoffs_are_forgotten_first():
    standing = Standing(PeerLimits(max_peers=3, ban_ms=1000))
    standing.restore_ban("ended", T0 + 1000, T0)
    standing.restore_ban("running", T0 + 60_000, T0)
    standing.record_valid("idle", T0)
    standing.record_valid("new", T0 + 2000)  # the ban of "ended" is over: it goes before "running" or "idle"
    assert set(standing.peers()) == {"running", "idle", "new"}
    guard = AddressGuard(AddressLimits(max_keys=2, abuse_window_ms=1000, max_streams=1))
    assert guard.begin_stream("busy", T0)
    guard.strike("stale", "handshake", T0 + 1)
    guard.allow_connection("new", T0 + 2000)  # the strike of "stale" is past its window: it goes, not "busy"
    assert not guard.begin_stream("busy", T0 + 2001)  # still remembered with its stream running
    assert len(guard) == 2


def test_invalid_input_weighs_by_its_cost():
    assert invalid_weight() == 1
    assert invalid_weight(cost_ms=1330) == pytest.approx(26.6)  # the 1 MiB frame: 1.33 s of work
    assert invalid_weight(nbytes=1 << 20) == 16
    standing = Standing(PeerLimits(invalid_threshold=20))
    assert standing.record_invalid("p", "bad_message", T0, invalid_weight(cost_ms=1330))  # cut off at once
    assert standing.summary("p")["invalid"] == 1


def test_connections_per_address_are_rate_limited():
    guard = AddressGuard(AddressLimits(connections_per_minute=6))
    assert [guard.allow_connection("10.0.0.1", T0) for _ in range(7)] == [None] * 6 + ["rate"]
    assert guard.allow_connection("10.0.0.2", T0) is None  # per address
    assert guard.allow_connection("10.0.0.1", T0 + 10_000) is None  # one more after 10 s


def test_streams_per_address_are_bounded():
    guard = AddressGuard(AddressLimits(max_streams=2))
    assert guard.begin_stream("a", T0) and guard.begin_stream("a", T0) and not guard.begin_stream("a", T0)
    guard.end_stream("a")
    assert guard.begin_stream("a", T0)
