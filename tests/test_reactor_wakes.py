"""Wakes on time and once (issue 33, item 5): wake cooldowns per signal kind that never outlast a
signal's own deadline, events handled outside a wake settle it, and cooldowns lifted by hand."""

from __future__ import annotations

import json

import pytest

from meshnode.engines.reactor.core import Reactor
from meshnode.engines.reactor.limits import cooldown_parts, hold_end, wake_key
from meshnode.engines.reactor.types import Event, ReactorState, RunEnded, Settled, Severity, TraceKind
from tests.reactor_strategies import T0, registry, small_config

H = 3_600_000


def core(**over):
    return Reactor(small_config(**{"wake_cooldown_hours": 6, "event_ttl_hours": 48, **over}), registry())


def ev(agent, key, etype="note.direct", sev=Severity.P2, at=T0, **refs):
    return Event(etype, refs.pop("subject", "s"), agent, sev, key, "agent", (TraceKind.MESSAGE,), at, "test", "summary",
                 refs)


def offer(agent, key, at, valid_ms):
    return Event("task.offer", key, agent, Severity.P2, key, "agent", (TraceKind.RECEIPT,), at, "gmp", "offer",
                 {"lineage": key, "expires_ms": at + valid_ms})


def actions(step, key):
    return [d.action for d in step.decisions if d.dedupe_key == key]


def test_a_cooldown_is_per_signal_kind_not_per_agent():
    r = core()
    assert [j.agent for j in r.step(T0, [ev("scout", "n1")]).jobs] == ["scout"]
    s = r.step(T0 + 1000, [ev("scout", "n2"), offer("scout", "o1", T0 + 1000, 4 * H)])
    assert [j.events for j in s.jobs] == [("o1", "n2")]  # the offer's kind is free; the note rides along
    s = r.step(T0 + 2000, [ev("scout", "n3")])
    assert s.jobs == [] and actions(s, "n3") == ["held_cooldown"]
    assert "wake:scout:direct_note until" in s.decisions[-1].why


def test_an_offer_valid_for_an_hour_wakes_before_it_expires_although_its_kind_cools():
    r = core()
    assert r.step(T0, [offer("scout", "o1", T0, 4 * H)]).jobs  # offers: cooling for 6 h from now
    s = r.step(T0 + 60_000, [offer("scout", "o2", T0 + 60_000, H)])
    assert s.jobs == [] and actions(s, "o2") == ["held_cooldown"]
    assert "its deadline wakes it by" in [d.why for d in s.decisions if d.dedupe_key == "o2"][0]
    end = hold_end(offer("scout", "o2", T0 + 60_000, H))
    assert end == T0 + 60_000 + H - 30 * 60_000
    assert r.step(end - 1, []).jobs == []
    s = r.step(end, [])
    assert [j.events for j in s.jobs] == [("o2",)] and actions(s, "o2") == ["woken"]


def test_an_event_whose_deadline_passed_while_held_expires_rather_than_wakes():
    r = core(max_wakes_per_hour=1)
    r.step(T0, [ev("ava", "n1")])  # the hourly ceiling used up
    s = r.step(T0 + 1000, [offer("scout", "o1", T0 + 1000, 10 * 60_000)])
    assert actions(s, "o1") == ["held_budget"]
    s = r.step(T0 + 20 * 60_000, [])
    assert actions(s, "o1") == ["expired"] and s.jobs == []


def test_a_tick_that_handled_a_pending_event_settles_it():
    r = core()
    r.step(T0, [ev("scout", "n1")])
    r.step(T0 + 1000, [ev("scout", "n2")])  # held: direct_note cools
    s = r.step(T0 + 2000, [Settled(("n2",), T0 + 2000, "tick")])
    assert actions(s, "n2") == ["settled"] and s.changed.event_status["n2"] == ("done", None)
    assert r.step(T0 + 7 * H, []).jobs == []  # nothing left to wake for


def test_a_queued_wake_whose_events_were_handled_is_skipped_and_its_cooldown_lifted():
    r = core()
    job = r.step(T0, [ev("scout", "n1"), ev("scout", "n2")]).jobs[0]
    s = r.step(T0 + 1000, [Settled(("n1",), T0 + 1000)])
    assert actions(s, "n1") == ["settled"] and r.open_jobs()[0].events == ("n2",)
    s = r.step(T0 + 2000, [Settled(("n2",), T0 + 2000)])
    assert r.open_jobs() == [] and s.changed.jobs[-1].status == "skipped"
    assert actions(s, job.job_id) == ["settled"]
    assert s.changed.cooldowns[wake_key("scout", "direct_note")] == (0, 0)
    assert [j.events for j in r.step(T0 + 3000, [ev("scout", "n3")]).jobs] == [("n3",)]  # not held 6 h


def test_a_run_the_driver_found_settled_calls_no_llm_and_lifts_its_cooldown():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    s = r.step(T0 + 1000, [RunEnded(job.job_id, T0 + 1000, "settled")])
    assert actions(s, "n1") == ["settled"] and s.changed.jobs[-1].status == "skipped"
    assert r.step(T0 + 2000, []).checks == []  # no trace check: nothing is owed
    assert r.step(T0 + 3000, [ev("scout", "n3")]).jobs


def test_a_settled_event_a_running_job_carries_is_left_to_the_trace_check():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    job.status = "running"
    s = r.step(T0 + 1000, [Settled(("n1",), T0 + 1000)])
    assert actions(s, "n1") == [] and r.open_jobs()[0].events == ("n1",)


def test_cooldowns_listed_and_lifted_by_hand_persist_with_the_next_step():
    r = core()
    r.step(T0, [ev("scout", "n1")])
    key = wake_key("scout", "direct_note")
    assert key in r.cooldowns(T0 + 1)
    with pytest.raises(ValueError, match="not a cooldown"):
        r.lift(["esc:scout:n1"])
    assert r.lift([key]) == [key]
    s = r.step(T0 + 1000, [ev("scout", "n2")])
    assert s.changed.cooldowns[key][0] == T0 + 1000 + r.cfg.wake_cooldown_ms  # woken again at once
    assert [j.events for j in s.jobs] == [("n2",)]


def test_a_per_agent_cooldown_row_of_before_still_holds_every_kind_until_it_ends():
    state = ReactorState(cooldowns={"wake:scout": (T0 + H, 1)})
    r = Reactor(small_config(wake_cooldown_hours=6), registry(), ReactorState.from_dict(
        json.loads(json.dumps(state.to_dict()))))
    s = r.step(T0, [ev("scout", "n1"), offer("scout", "o1", T0, 4 * H)])
    assert s.jobs == [] and actions(s, "o1") == ["held_cooldown"]
    assert cooldown_parts("wake:scout") == {"limit": "wake", "agent": "scout", "kind": "*"}
    assert r.lift(["wake:scout"]) == ["wake:scout"]
    assert r.step(T0 + 1000, []).jobs


def test_cooldown_keys_in_words():
    did = "did:key:z6MkAbc"
    assert cooldown_parts(wake_key(did, "offer")) == {"limit": "wake", "agent": did, "kind": "offer"}
    assert cooldown_parts(f"wake:{did}") == {"limit": "wake", "agent": did, "kind": "*"}
    assert cooldown_parts("nudge:L1:scout")["limit"] == "nudge"
    for other in ("int:n1", "check:scout", "esc:scout:n1"):
        with pytest.raises(ValueError):
            cooldown_parts(other)
