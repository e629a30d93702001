"""The reactor core: properties of design 16 (Hypothesis) and one example per rule of design 6 and 10."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from hypothesis import HealthCheck, given, settings

from meshnode.engines.reactor.core import Reactor
from meshnode.engines.reactor.types import (
    Event, FinalReport, LeaseRefused, ReactorState, RunEnded, Severity, Trace, TraceKind, TracesFound,
)
from tests.reactor_strategies import (
    EXTERNAL, MENTOR, PEER, SELF, T0, Driver, registry, scans, small_config,
)

PROPS = settings(max_examples=int(__import__("os").environ.get("REACTOR_EXAMPLES", "60")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
FINAL = {"woken", "coalesced", "routed_coordinator", "held_cooldown", "held_budget", "digest_only", "escalated",
         "noise", "unknown_agent", "expired", "escalation_capped"}


def play(stream, cfg=None):
    d = Driver(Reactor(cfg or small_config(), registry()))
    for dt, evs, fate in stream:
        d.scan(dt, evs, fate)
    return d


def all_escalation_keys(d: Driver):
    """(key, agent, event_key, level) of every escalation: notes for the driver and local-mentor events."""
    out = []
    for _now, _inputs, step in d.log:
        out += [(x.key, x.agent, x.event_key, x.level) for x in step.escalations]
        out += [(e.dedupe_key, e.refs["agent"], e.refs["event_key"], 1) for e in step.accepted
                if e.event_type == "note.escalation" and e.source == "reactor"]
    return out


# ---- properties (design 16) ------------------------------------------------------------------

@PROPS
@given(scans())
def test_wake_cooldown_and_hourly_ceiling(stream):
    cfg = small_config()
    d = play(stream, cfg)
    jobs = [j for _n, _i, step in d.log for j in step.jobs]
    last: dict[tuple[str, str], int] = {}  # (agent, signal kind) -> its last wake: cooldowns are per kind
    for j in jobs:
        if j.priority != Severity.P1:  # one of its kinds was not woken within the cooldown
            free = [k for k in j.reason if (prev := last.get((j.agent, k))) is None
                    or j.created_ms - prev >= cfg.wake_cooldown_ms]
            assert free, (j.agent, j.reason, j.created_ms, last)
        for k in j.reason:
            last[(j.agent, k)] = j.created_ms
        in_hour = [k for k in jobs if j.created_ms - 3_600_000 < k.created_ms <= j.created_ms]
        assert len(in_hour) <= cfg.max_wakes_per_hour
    per_scan = defaultdict(list)
    for j in jobs:
        per_scan[j.created_ms].append(j.agent)
    for agents in per_scan.values():
        assert len(agents) == len(set(agents))  # one job per agent per scan


@PROPS
@given(scans())
def test_every_accepted_event_gets_a_decision(stream):
    d = play(stream)
    for _now, _inputs, step in d.log:
        first: dict[str, str] = {}
        for dec in step.decisions:
            if dec.action != "duplicate":
                first.setdefault(dec.dedupe_key, dec.action)
        for e in step.accepted:
            assert first.get(e.dedupe_key) in FINAL, (e.dedupe_key, first.get(e.dedupe_key))
        assert len({e.dedupe_key for e in step.accepted}) == len(step.accepted)
    keys = [e.dedupe_key for _n, _i, step in d.log for e in step.accepted]
    state = d.r.state()
    pending = {e.dedupe_key for evs in state.pending.values() for e in evs}
    assert pending <= set(keys) | {k for k, _a, _e, _l in all_escalation_keys(d)}


@PROPS
@given(scans(max_scans=16))
def test_replay_through_a_rebuilt_core_adds_nothing(stream):
    cfg = small_config()
    d = play(stream, cfg)
    state = json.loads(json.dumps(d.r.state().to_dict()))
    fresh = Reactor(cfg, registry(), ReactorState.from_dict(state))
    replayed = Reactor(cfg, registry(), ReactorState.from_dict(state))
    base = fresh.step(d.now, [])
    # a key unseen for a whole dedupe window is forgotten by design: replaying its
    # event is a new signal, so the replay carries only what the state still remembers
    remembered = set(state["seen"])
    replay = [x for _n, inputs, _s in d.log for x in inputs
              if not isinstance(x, Event) or x.dedupe_key in remembered]
    again = replayed.step(d.now, replay)
    assert again.accepted == []
    assert [(j.agent, j.events) for j in again.jobs] == [(j.agent, j.events) for j in base.jobs]
    assert [x.key for x in again.escalations] == [x.key for x in base.escalations]
    assert [dec for dec in again.decisions if dec.action != "duplicate"] == base.decisions


@PROPS
@given(scans(max_scans=30))
def test_escalation_keys_unique_and_ladder_never_skips(stream):
    d = play(stream)
    esc = all_escalation_keys(d)
    keys = [k for k, _a, _e, _l in esc]
    assert len(keys) == len(set(keys))
    cfg = d.r.cfg
    climbed: set[tuple[str, str, str]] = set()
    for key, agent, event_key, level in esc:
        rnd = (re.search(r":r(\d+)$", key) or [None, "0"])[1]
        if level == 1:
            climbed.add((agent, event_key, rnd))
        elif cfg.mentor_of(agent):
            assert (agent, event_key, rnd) in climbed, key


# ---- examples of each rule -------------------------------------------------------------------

def ev(agent, key, sev=Severity.P2, etype="note.direct", traces=(TraceKind.MESSAGE,), **kw):
    return Event(etype, kw.pop("subject", "s"), agent, sev, key, kw.pop("route", "agent"), traces,
                 kw.pop("at_ms", T0), "test", "summary", kw.pop("refs", {}), **kw)


def core(**over):
    return Reactor(small_config(**over), registry())


def actions(step, key):
    return [d.action for d in step.decisions if d.dedupe_key == key]


def test_coordinator_routing_five_agents_three_per_scan():
    r = core()
    agents = ["scout", "ava", "bob", "cid", "self"]
    s = r.step(T0, [ev(a, f"note:{a}") for a in agents])
    assert [j.agent for j in s.jobs] == [SELF]
    assert set(s.jobs[0].events) == {f"note:{a}" for a in agents}
    for a in ("scout", "ava", "bob", "cid"):
        assert actions(s, f"note:{a}") == ["routed_coordinator"]
    assert len(s.jobs[0].context["inbox"]) == 5


def test_three_agents_each_get_their_own_job():
    s = core().step(T0, [ev(a, f"note:{a}") for a in ("scout", "ava", "bob")])
    assert sorted(j.agent for j in s.jobs) == ["ava", "bob", "scout"]
    assert all(actions(s, f"note:{a}") == ["woken"] for a in ("scout", "ava", "bob"))


def test_cooldown_holds_and_p1_bypasses():
    r = core()
    r.step(T0, [ev("scout", "n1")])
    s = r.step(T0 + 1000, [ev("murr", "n2")])
    assert s.jobs == [] and actions(s, "n2") == ["held_cooldown"]
    s = r.step(T0 + 2000, [ev("scout", "n3", sev=Severity.P1)])
    assert [set(j.events) for j in s.jobs] == [{"n2", "n3"}]  # the held event goes into the next wake
    s = r.step(T0 + 3000, [ev("scout", "n4")])
    assert s.jobs == [] and actions(s, "n4") == ["held_cooldown"]
    s = r.step(T0 + 2000 + small_config().wake_cooldown_ms, [])
    assert [j.events for j in s.jobs] == [("n4",)]


def test_a_result_to_review_wakes_the_delegator_whatever_the_cooldowns():
    """task.result (a task another finished, once per finishing version) starts no wake cooldown
    and waits for none: the delegator's goal waits on it. Progress keeps its kind's cooldown."""
    r = core()

    def result(key):
        return ev("scout", key, sev=Severity.P2, etype="task.result", traces=(TraceKind.NONE,))

    r.step(T0, [ev("scout", "n1")])  # a wake: note kinds cool down
    s = r.step(T0 + 1000, [result("res:1"), ev("scout", "n2")])
    assert [j.events for j in s.jobs] == [("res:1", "n2")] and actions(s, "res:1") == ["woken"]
    s = r.step(T0 + 2000, [result("res:2")])
    assert [j.events for j in s.jobs] == [("res:2",)]  # a second result within the cooldown wakes too
    s = r.step(T0 + 3000, [ev("scout", "p:1", sev=Severity.P3, etype="task.progress", traces=(TraceKind.NONE,))])
    assert [j.events for j in s.jobs] == [("p:1",)]
    s = r.step(T0 + 4000, [ev("scout", "p:2", sev=Severity.P3, etype="task.progress", traces=(TraceKind.NONE,))])
    assert s.jobs == [] and actions(s, "p:2") == ["held_cooldown"]


def test_a_p1_dropped_by_its_nudge_cooldown_does_not_bypass_the_wake_cooldown():
    r = core()
    due = dict(etype="task.due", traces=(TraceKind.TASK_UPDATE,), refs={"lineage": "L1"})
    assert len(r.step(T0, [ev("scout", "due:1", **due)]).jobs) == 1
    other = dict(due, refs={"lineage": "L2"})  # the same kind (task_due), another task: no nudge cooldown
    s = r.step(T0 + 1000, [ev("scout", "due:2", sev=Severity.P1, **due), ev("scout", "due:3", **other)])
    assert s.jobs == [] and actions(s, "due:2") == ["held_cooldown"] and actions(s, "due:3") == ["held_cooldown"]
    assert "wake:scout:task_due" in [d.why.split()[1] for d in s.decisions if d.dedupe_key == "due:3"]


def test_hourly_ceiling_includes_p1():
    r = core(max_wakes_per_hour=2, wake_cooldown_hours=0, event_ttl_hours=2)
    for i in range(2):
        assert len(r.step(T0 + i, [ev("scout", f"p{i}", sev=Severity.P1)]).jobs) == 1
    s = r.step(T0 + 5, [ev("scout", "p9", sev=Severity.P1)])
    assert s.jobs == [] and actions(s, "p9") == ["held_budget"]
    assert len(r.step(T0 + 3_600_001, []).jobs) == 1


def test_nudge_cooldown_drops_the_event():
    r = core(wake_cooldown_hours=0)
    due = dict(etype="task.due", traces=(TraceKind.TASK_UPDATE,), refs={"lineage": "L1"})
    assert len(r.step(T0, [ev("scout", "due:1", **due)]).jobs) == 1
    s = r.step(T0 + 1000, [ev("scout", "due:2", **due), ev("scout", "note:x")])
    assert actions(s, "due:2") == ["held_cooldown"]
    assert [j.events for j in s.jobs] == [("note:x",)]
    assert "due:2" not in {e.dedupe_key for evs in r.state().pending.values() for e in evs}


def test_info_events_are_digest_only_and_ride_along():
    r = core()
    s = r.step(T0, [ev(PEER, "live:quiet:1", sev=Severity.P4, etype="liveness.quiet", traces=(TraceKind.NONE,))])
    assert s.jobs == [] and actions(s, "live:quiet:1") == ["digest_only"]
    s = r.step(T0 + 1, [ev("self", "note:1")])
    assert set(s.jobs[0].events) == {"note:1", "live:quiet:1"}


def test_routes_reroute_an_event_type():
    r = core(routes={"task.due": "coordinator"})
    s = r.step(T0, [ev("ava", "due:1", etype="task.due", traces=(TraceKind.TASK_UPDATE,))])
    assert [j.agent for j in s.jobs] == [SELF]


def test_rules_off_logs_digest_only():
    s = core(rules_off=["direct_note"]).step(T0, [ev("scout", "n1")])
    assert s.jobs == [] and actions(s, "n1") == ["digest_only"]


def test_unknown_agents_are_never_routed():
    r = core()
    s = r.step(T0, [ev("ghost", "n1"), ev("ghost", "n1")])
    assert actions(s, "n1") == ["unknown_agent", "duplicate"]
    assert s.jobs == [] and s.accepted[0].agent == "ghost"
    assert s.changed.event_status["n1"] == ("unknown", None)
    assert r.step(T0 + 10**7, []).jobs == []


def test_aliases_resolve_to_the_canonical_agent():
    s = core().step(T0, [ev("@Ductor", "n1")])
    assert s.accepted[0].agent == SELF and s.jobs[0].agent == SELF


def test_noise_is_stored_with_its_filter_and_never_woken():
    s = core().step(T0, [ev("scout", "n1", noise="flood")])
    assert s.jobs == [] and [(d.action, d.why) for d in s.decisions] == [("noise", "filter flood")]


def test_pending_events_expire():
    r = core(max_wakes_per_hour=1)
    r.step(T0, [ev("scout", "a")])
    s = r.step(T0 + 1, [ev("ava", "b")])
    assert actions(s, "b") == ["held_budget"]
    s = r.step(T0 + small_config().event_ttl_ms + 1, [])
    assert actions(s, "b") == ["expired"] and s.changed.event_status["b"] == ("expired", None)


def run_to_check(r, job, at, **kw):
    r.step(at, [RunEnded(job.job_id, at, "ok", **kw)])
    s = r.step(at + r.cfg.trace_grace_ms, [])
    assert [c.job_id for c in s.checks] == [job.job_id]
    return s.checks[0]


def test_an_unanswered_check_is_asked_again_later():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    at = T0 + 1000 + r.cfg.trace_grace_ms
    assert r.step(at + 1, []).checks == []
    assert [c.job_id for c in r.step(at + 60_000, []).checks] == [job.job_id]


def test_trace_found_closes_the_job_ok():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    check = run_to_check(r, job, T0 + 1000)
    assert check.since_ms == T0 and check.events[0][0] == "n1"
    s = r.step(T0 + 60_000, [TracesFound(job.job_id, T0 + 60_000, (Trace("n1", TraceKind.MESSAGE, "n5", "scout", T0),))])
    assert actions(s, "n1") == ["trace_ok"] and s.escalations == [] and s.changed.jobs[-1].status == "ok"
    assert r.state().jobs == {}


def test_status_only_trace_kind_mismatch_fails_and_remote_mentor_gets_one_escalation():
    r = core()
    job = r.step(T0, [ev("ava", "n1")]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    s = r.step(T0 + 60_000, [TracesFound(job.job_id, T0 + 60_000, (Trace("n1", TraceKind.HEARTBEAT, "x", "ava", T0),))])
    assert actions(s, "n1") == ["trace_missing", "escalated"]
    [esc] = s.escalations
    assert (esc.key, esc.to_id, esc.level) == ("esc:mentor:ava:n1", MENTOR, 1)
    assert "dedupe:" not in esc.text and len(esc.text) <= 1000  # the note's one dedupe line is escalate.note_text's
    # the watch job looks again after mentor_answer_hours; still nothing -> the operator
    s = r.step(T0 + 60_000 + r.cfg.mentor_answer_ms, [])
    [watch] = s.checks
    s = r.step(T0 + 70_000 + r.cfg.mentor_answer_ms, [TracesFound(watch.job_id, 0, ())])
    assert [(x.key, x.to_id, x.level) for x in s.escalations] == [("esc:operator:ava:n1", "operator", 2)]


def test_local_mentor_gets_a_pending_escalation_event():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    s = r.step(T0 + 60_000, [TracesFound(job.job_id, 0, ())])
    assert s.escalations == []
    [note] = [e for e in s.accepted if e.event_type == "note.escalation"]
    assert note.dedupe_key == "esc:mentor:scout:n1" and note.agent == SELF
    assert [j.agent for j in s.jobs] == [SELF] and s.jobs[0].events == ("esc:mentor:scout:n1",)


def test_liveness_dead_escalates_at_once_once():
    r = core()
    dead = ev("ava", "live:dead:ava:1", etype="liveness.dead", traces=(TraceKind.HEARTBEAT, TraceKind.ACK))
    s = r.step(T0, [dead])
    assert s.jobs == [] and [x.key for x in s.escalations] == ["esc:mentor:ava:live:dead:ava:1"]
    assert r.step(T0 + 1, [dead]).escalations == []
    # a heartbeat later clears it
    s = r.step(T0 + r.cfg.mentor_answer_ms, [])
    [watch] = s.checks
    s = r.step(T0 + r.cfg.mentor_answer_ms + 1, [TracesFound(watch.job_id, 0, (Trace("live:dead:ava:1", TraceKind.HEARTBEAT, "hb", "ava", T0),))])
    assert actions(s, "live:dead:ava:1") == ["trace_ok"] and r.state().failures == {}


def test_no_mentor_goes_to_the_operator_and_repeats_after_the_round():
    r = core(escalation_repeat_hours=0.005, dedupe_days=0.01)
    dead = ev("cid", "live:dead:cid:1", etype="liveness.dead", traces=(TraceKind.HEARTBEAT,))
    keys, now = [], T0
    keys += [x.key for x in r.step(now, [dead]).escalations]
    for _ in range(6):
        now += r.cfg.escalation_repeat_ms
        s = r.step(now, [])
        for c in s.checks:
            keys += [x.key for x in r.step(now, [TracesFound(c.job_id, now, ())]).escalations]
    assert keys[:3] == ["esc:operator:cid:live:dead:cid:1", "esc:operator:cid:live:dead:cid:1:r1",
                        "esc:operator:cid:live:dead:cid:1:r2"]
    assert len(keys) == len(set(keys)) and len(keys) <= 1 + 864_000 // r.cfg.escalation_repeat_ms


def test_an_escalation_key_is_never_sent_twice_even_if_failure_rows_are_lost():
    r = core()
    job = r.step(T0, [ev("ava", "n1")]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    s = r.step(T0 + 60_000, [TracesFound(job.job_id, 0, ())])
    assert [x.key for x in s.escalations] == ["esc:mentor:ava:n1"]
    st = r.state()
    st.failures.clear()  # e.g. pruned rows: the ladder would start again at level 1
    st.cooldowns = {k: v for k, v in st.cooldowns.items() if not k.startswith("esc:")}
    r2 = Reactor(r.cfg, registry(), st)
    now = T0 + 60_000 + r.cfg.mentor_answer_ms
    [watch] = r2.step(now, []).checks
    s = r2.step(now + 1, [TracesFound(watch.job_id, 0, ())])
    assert s.escalations == [] and actions(s, "n1") == ["trace_missing", "escalation_capped"]


def test_a_lost_round_row_does_not_stop_the_repeats():
    r = core(escalation_repeat_hours=0.005, dedupe_days=0.01)
    dead = ev("cid", "live:dead:cid:1", etype="liveness.dead", traces=(TraceKind.HEARTBEAT,))
    now, keys = T0, [x.key for x in r.step(T0, [dead]).escalations]
    for _ in range(2):
        now += r.cfg.escalation_repeat_ms
        st = r.state()
        st.cooldowns = {k: v for k, v in st.cooldowns.items() if not k.startswith("esc:")}  # expired rows not loaded
        r = Reactor(r.cfg, registry(), st)
        for c in r.step(now, []).checks:
            keys += [x.key for x in r.step(now, [TracesFound(c.job_id, now, ())]).escalations]
    assert keys == ["esc:operator:cid:live:dead:cid:1", "esc:operator:cid:live:dead:cid:1:r1",
                    "esc:operator:cid:live:dead:cid:1:r2"]


def test_report_mismatch_fails_the_job():
    r = core()
    job = r.step(T0, [ev("ava", "n1")]).jobs[0]
    s = r.step(T0 + 10, [RunEnded(job.job_id, T0 + 10, "ok", mismatches=("note 7 has no reply",))])
    assert actions(s, job.job_id) == ["report_mismatch"] and actions(s, "n1")[0] == "trace_missing"
    assert [x.key for x in s.escalations] == ["esc:mentor:ava:n1"]


def test_needs_human_sends_the_digest_to_the_operator_and_next_check_schedules_a_self_check():
    r = core()
    job = r.step(T0, [ev("cid", "n1")]).jobs[0]
    rep = FinalReport(("1",), (), (), False, "", True, T0 + 3_600_000)
    s = r.step(T0 + 10, [RunEnded(job.job_id, T0 + 10, "ok", report=rep)])
    assert [(x.to_id, x.level) for x in s.escalations] == [("operator", 2)] and s.escalations[0].key.startswith("esc:operator:cid:wake:")
    assert s.changed.cooldowns["check:cid"] == (T0 + 3_600_000, 1)
    s = r.step(T0 + 3_600_000, [])
    assert [e.dedupe_key for e in s.accepted] == [f"selfcheck:cid:{T0 + 3_600_000}"]
    assert [j.agent for j in s.jobs] == ["cid"]


def test_blocked_report_counts_as_a_blocker_trace():
    r = core()
    job = r.step(T0, [ev("ava", "n1", traces=(TraceKind.MESSAGE, TraceKind.BLOCKER))]).jobs[0]
    rep = FinalReport((), (), (), True, "the key holder is away until Monday", False, None)
    run_to_check(r, job, T0 + 10, report=rep)
    s = r.step(T0 + 100_000, [TracesFound(job.job_id, 0, ())])
    assert actions(s, "n1") == ["trace_ok"]


def test_lease_refused_skips_and_interrupted_returns_once():
    r = core(wake_cooldown_hours=0)
    job = r.step(T0, [ev("ava", "n1")]).jobs[0]
    s = r.step(T0 + 1, [LeaseRefused(job.job_id, "other")])
    assert actions(s, "n1") == ["skipped"] and s.changed.jobs[0].status == "skipped"
    job = r.step(T0 + 2, [ev("ava", "n2")]).jobs[0]
    s = r.step(T0 + 3, [RunEnded(job.job_id, T0 + 3, "interrupted")])
    assert actions(s, "n2")[0] == "interrupted" and [j.events for j in s.jobs] == [("n2",)]
    s = r.step(T0 + 4, [RunEnded(s.jobs[0].job_id, T0 + 4, "interrupted")])
    assert actions(s, "n2")[:2] == ["interrupted", "escalated"]


def test_operator_route_notes_the_person_once():
    r = core()
    conf = ev("self", "confirm:1", etype="person.confirmation", traces=(TraceKind.DECISION,))
    s = r.step(T0, [conf])
    assert [(x.to_id, x.level) for x in s.escalations] == [("operator", 2)] and s.jobs == []
    assert r.step(T0 + 1, [conf]).escalations == []


def test_non_local_target_goes_to_the_digest():
    s = core().step(T0, [ev(PEER, "live:stale:p", etype="liveness.stale", traces=(TraceKind.HEARTBEAT,))])
    assert actions(s, "live:stale:p") == ["digest_only"] and s.jobs == []


def test_may_send_limits_per_thread_and_refuses_broadcast():
    r = core()
    assert [r.may_send("self", "ava", "t", T0 + i) for i in range(4)] == [True, True, True, False]
    assert r.may_send("self", "ava", "t2", T0) and not r.may_send("self", "", "t", T0)
    assert r.may_send("self", "ava", "t", T0 + 3_600_000)
    assert "msg:self:ava:t" in r.step(T0 + 3_600_001, []).changed.cooldowns


def test_cheap_accessors():
    r = core()
    job = r.step(T0, [ev("scout", "n1")]).jobs[0]
    r.step(T0 + 1, [ev("scout", "n2")])
    assert r.open_jobs() == [job] and r.event("n1").agent == "scout" and r.event("n2").dedupe_key == "n2"
    assert r.event("nope") is None


def test_state_round_trips_through_json():
    d = play([(1000, [ev(a, f"n:{a}") for a in EXTERNAL], [5]), (60_000, [], [3, 0])])
    st = d.r.state()
    back = ReactorState.from_dict(json.loads(json.dumps(st.to_dict())))
    assert back.to_dict() == st.to_dict()


def reactor_lines(run) -> int:
    """The work ``run()`` makes the reactor do, counted: the lines of meshnode/engines/reactor that the
    interpreter runs (sys.settrace), the same on any machine however busy. A loop over the state
    in Python shows; a C-level copy of it (``dict(...)``, ``sorted(...)``) would not."""
    import sys
    from pathlib import Path

    import meshnode.engines.reactor

    root, count = str(Path(meshnode.engines.reactor.__file__).parent), 0

    def line(frame, event, arg):
        nonlocal count
        count += event == "line"
        return line

    sys.settrace(lambda frame, event, arg: line if frame.f_code.co_filename.startswith(root) else None)
    try:
        run()
    finally:
        sys.settrace(None)
    return count


def test_step_is_linear_in_events():
    """O(1) per event, counted rather than timed (bench/reactor.py has the events per second): one
    step of 500 new events does the same work whether the core holds 2,500 or 20,500 keys and
    thousands of pending events, and 10x the events in a stream is at most 10x the work."""
    def stream(n):
        r = Reactor(small_config(max_wakes_per_hour=10000), registry())
        evs = [ev(EXTERNAL[i % 4], f"k{i}") for i in range(n + 500)]
        whole = reactor_lines(lambda: [r.step(T0 + i, evs[i:i + 500]) for i in range(0, n, 500)])
        one_more = reactor_lines(lambda: r.step(T0 + n, evs[n:]))
        return whole, one_more, len(r._seen), len(r.queues)

    small, big = stream(2000), stream(20_000)
    assert (small[2], big[2]) == (2500, 20_500) and big[3] > 5 * small[3], (small, big)  # the state grew
    assert big[1] <= small[1] * 1.05, (small, big)  # measured: equal (a loop over the keys held: 1.5x)
    assert big[0] <= small[0] * 10 * 1.05, (small, big)  # measured: 9.5x (that loop: 11.8x)


def test_a_failed_job_with_many_missing_events_batches_per_recipient_and_level():
    r = core(wake_cooldown_hours=0)
    job = r.step(T0, [ev("ava", f"n{i}", at_ms=T0 + i) for i in range(4)]).jobs[0]
    run_to_check(r, job, T0 + 1000)
    conf = [ev("self", f"confirm:{i}", etype="person.confirmation", traces=(TraceKind.DECISION,)) for i in range(2)]
    s = r.step(T0 + 60_000, [conf[0], TracesFound(job.job_id, 0, ()), conf[1]])
    assert sorted(x.key for x in s.escalations if x.level == 1) == [f"esc:mentor:ava:n{i}" for i in range(4)]
    batches = s.escalation_batches()  # one note per (recipient, level); each escalation keeps its key
    assert [[(x.to_id, x.level) for x in b] for b in batches] == [[("operator", 2)] * 2, [(MENTOR, 1)] * 4]
    assert [x.key for b in batches for x in b] == [x.key for x in sorted(s.escalations, key=lambda x: -x.level)]


def test_group_escalations_works_on_rows_rebuilt_by_the_driver():
    from meshnode.engines.reactor.types import Escalation, group_escalations

    xs = [Escalation(f"esc:{i}", "ava", to, lvl, f"n{i}", "note.direct", "s", "t", None, T0)
          for i, (to, lvl) in enumerate([(MENTOR, 1), ("operator", 2), (MENTOR, 1), (MENTOR, 2), ("operator", 2)])]
    assert [[x.key for x in b] for b in group_escalations(xs)] == [["esc:0", "esc:2"], ["esc:1", "esc:4"], ["esc:3"]]
