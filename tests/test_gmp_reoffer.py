"""The rules for a task taken back from its holder (meshnode.domain.gmp.reoffer, issue 35 defect 5):
offered again to the goal's participants first, never to this node, a removed holder or a dead
peer; unclaimed (the goal owner's inbox) once unheld past the bound after it was taken back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from meshnode.domain.gmp.reoffer import MAX_CANDIDATES, UNCLAIMED_AFTER_MS, participants_first, unclaimed

peers = st.sampled_from([f"did:key:z6Mk{n:04d}" for n in range(24)])
states = st.sampled_from(["ok", "quiet", "stale", "dead"])


@given(me=peers, participants=st.lists(peers, max_size=30), removed=st.lists(peers, max_size=3),
       liveness=st.dictionaries(peers, states))
def test_participants_first_offers_to_the_living_participants_never_to_me_or_a_removed_holder(
        me, participants, removed, liveness):
    chosen = participants_first(me, participants, removed, liveness)
    eligible = {p for p in participants if p != me and p not in removed and liveness.get(p) != "dead"}
    assert set(chosen) <= eligible and len(chosen) == len(set(chosen))
    assert len(chosen) == min(len(eligible), MAX_CANDIDATES)  # nobody eligible left out below the cap
    ranks = [{"ok": 0, "stale": 2}.get(liveness.get(p), 1) for p in chosen]
    assert ranks == sorted(ranks)  # heard well first, stale last
    if eligible:  # a participant is there: no interest lookup is needed
        assert chosen


def test_participants_first_examples():
    me, bob, carol, dave = "did:key:me", "did:key:bob", "did:key:carol", "did:key:dave"
    assert participants_first(me, [me, bob, carol], [bob], {}) == [carol]
    assert participants_first(me, [me, carol, dave], [], {dave: "ok", carol: "stale"}) == [dave, carol]
    assert participants_first(me, [me, bob], [], {bob: "dead"}) == []
    assert participants_first(me, ["not a did", 7, bob], [], {}) == [bob]


@given(now=st.integers(0, 2**40), since=st.integers(0, 2**40), holders=st.lists(peers, max_size=2),
       status=st.sampled_from(["pending", "in_progress", "completed", "abandoned"]),
       reason=st.sampled_from(["reassigned_dead", "reassigned_overdue", "created", "released", None]))
def test_unclaimed_is_a_task_taken_back_and_still_unheld_past_the_bound(now, since, holders, status, reason):
    expected = (status == "pending" and reason in ("reassigned_dead", "reassigned_overdue") and not holders
                and now - since >= UNCLAIMED_AFTER_MS)
    assert unclaimed(status, reason, holders, since, now) is expected


def test_unclaimed_at_the_bound_exactly():
    assert not unclaimed("pending", "reassigned_dead", [], 1000, 1000 + UNCLAIMED_AFTER_MS - 1)
    assert unclaimed("pending", "reassigned_dead", [], 1000, 1000 + UNCLAIMED_AFTER_MS)
