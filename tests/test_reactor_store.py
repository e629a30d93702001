"""The reactor's rows: save_step / load_state, replay, leases, interrupted jobs, retention."""

from __future__ import annotations

import threading

import pytest

from meshnode.engines.reactor import persist
from meshnode.records.reactor import leases, scans
from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.engines.reactor.core import Reactor
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import job_to_dict
from meshnode.engines.reactor.types import Event, RunEnded, Severity, Trace, TraceKind, TracesFound
from meshnode.store import Database

ME = "did:key:z6MkSelfNodeForReactorStoreTests"
PEER = "did:key:z6MkPeerNodeForReactorStoreTests"
MENTOR = "did:key:z6MkMentorNodeForReactorStoreTests"
CFG = ReactorConfig(self_id=ME, local_agents=frozenset({ME, "scout"}), trace_grace_seconds=0,
                    mentors={ME: MENTOR, "scout": MENTOR})
ALIASES = AliasRegistry.from_mapping({"agents": {"scout": {"aliases": ["murr"]}}}, self_id=ME)
T = 1_780_000_000_000
HOLDER = "101@hostA:1000"


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    yield d
    d.close()


def ev(key, agent=ME, etype="note.direct", sev=Severity.P2, at=T, route="agent", kinds=(TraceKind.MESSAGE,)):
    return Event(event_type=etype, subject=key, agent=agent, severity=sev, dedupe_key=key, suggested_route=route,
                 required_trace=kinds, at_ms=at, source="test", summary=f"summary of {key}",
                 refs={"note_id": 1, "thread": "t"})


def stream():
    return [ev("note:a"), ev("note:b", agent="murr"), ev("note:c", agent="nobody"),
            ev("note:d", sev=Severity.P3), ev("live:quiet:x:1", agent=PEER, etype="liveness.quiet", sev=Severity.P4,
                                              kinds=(TraceKind.NONE,)),
            Event("note.direct", "n", ME, Severity.P2, "note:noise", "agent", (TraceKind.MESSAGE,), T, "test", "s",
                  noise="repeat")]


def step_and_save(db, core, now, inputs):
    step = core.step(now, inputs)
    persist.save_step(db, step, now)
    return step


def test_save_and_load_round_trip(db):
    core = Reactor(CFG, ALIASES)
    step = step_and_save(db, core, T, stream())
    assert step.jobs, "the stream wakes someone"
    loaded = persist.load_state(db, T, CFG)
    want = core.state()
    assert loaded.seen == want.seen
    assert {a: sorted(e.dedupe_key for e in evs) for a, evs in loaded.pending.items()} == \
        {a: sorted(e.dedupe_key for e in evs) for a, evs in want.pending.items()}
    assert {j: persist_job(x) for j, x in loaded.jobs.items()} == {j: persist_job(x) for j, x in want.jobs.items()}
    assert loaded.cooldowns == want.cooldowns
    assert loaded.events == want.events
    assert loaded.failures == want.failures and loaded.escalated == want.escalated
    assert sorted(loaded.wakes) == sorted(want.wakes)
    rows = dict(db.conn.execute("SELECT dedupe_key, status FROM reactor_events").fetchall())
    assert rows["note:noise"] == "noise" and rows["note:c"] == "unknown" and rows["note:a"] == "job"
    assert db.conn.execute("SELECT count(*) FROM reactor_decisions WHERE action = 'duplicate'").fetchone()[0] == 0


def persist_job(j):
    return job_to_dict(j)


def test_replay_through_a_reloaded_core_adds_nothing(db):
    core = Reactor(CFG, ALIASES)
    step_and_save(db, core, T, stream())
    n_events = db.conn.execute("SELECT count(*) FROM reactor_events").fetchone()[0]
    n_jobs = db.conn.execute("SELECT count(*) FROM reactor_jobs").fetchone()[0]
    again = Reactor(CFG, ALIASES, persist.load_state(db, T + 60_000, CFG))
    step = step_and_save(db, again, T + 60_000, stream())
    assert step.accepted == [] and step.jobs == [] and step.escalations == []
    assert {d.action for d in step.decisions} == {"duplicate"}
    assert db.conn.execute("SELECT count(*) FROM reactor_events").fetchone()[0] == n_events
    assert db.conn.execute("SELECT count(*) FROM reactor_jobs").fetchone()[0] == n_jobs
    # duplicates are not stored (one per sighting per scan would grow without bound)
    assert db.conn.execute("SELECT count(*) FROM reactor_decisions WHERE at_ms = ?", (T + 60_000,)).fetchone()[0] == 0
    last = dict(db.conn.execute("SELECT dedupe_key, last_seen_ms FROM reactor_events").fetchall())
    assert last["note:a"] == T + 60_000  # seen again


def test_a_failed_job_escalates_once_across_a_reload(db):
    core = Reactor(CFG, ALIASES)
    step = step_and_save(db, core, T, [ev("note:a")])
    (job,) = step.jobs
    assert leases.take_lease(db, job.agent, job.job_id, HOLDER, T, T + 700_000)
    leases.set_job_status(db, job.job_id, "running", T + 1)
    step = step_and_save(db, core, T + 10, [RunEnded(job.job_id, T + 10, "ok")])  # grace 0: checked at once
    (check,) = step.checks
    assert check.job_id == job.job_id and check.agent == ME
    esc = list(step_and_save(db, core, T + 30, [TracesFound(job.job_id, T + 30, ())]).escalations)
    now = T + 40
    for _ in range(3):  # the ladder may escalate at this scan or the next
        s = step_and_save(db, core, now, [])
        esc += s.escalations
        now += 10
    assert [x.to_id for x in esc] == [MENTOR]
    rows = db.conn.execute("SELECT key, to_id, container_id FROM reactor_escalations").fetchall()
    assert rows == [(esc[0].key, MENTOR, None)]
    assert persist.unsent_escalations(db)[0]["key"] == esc[0].key
    persist.record_escalation(db, esc[0].key, "did:hmp:container:sent")
    assert persist.unsent_escalations(db) == []
    loaded = persist.load_state(db, now, CFG)
    assert sorted(loaded.wakes) == sorted(core.state().wakes) and loaded.failures == core.state().failures
    assert set(loaded.jobs) == set(core.state().jobs)  # the watch waiting for the mentor's answer
    again = Reactor(CFG, ALIASES, loaded)
    s = step_and_save(db, again, now, [ev("note:a")])
    assert s.escalations == [] and s.jobs == []
    assert db.conn.execute("SELECT status FROM reactor_jobs WHERE job_id = ?", (job.job_id,)).fetchone()[0] == "failed"


def test_two_connections_race_for_one_lease(tmp_path):
    path = tmp_path / "node.db"
    Database(path).close()
    dbs = [Database(path), Database(path)]
    results: list[bool] = [False, False]
    barrier = threading.Barrier(2)

    def take(i):
        barrier.wait()
        results[i] = leases.take_lease(dbs[i], ME, f"job-{i}", f"{100 + i}@hostA:1000", T, T + 60_000)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == [False, True]
    winner = results.index(True)
    row = dbs[0].conn.execute("SELECT job_id FROM reactor_leases WHERE agent = ?", (ME,)).fetchone()
    assert row[0] == f"job-{winner}"
    for d in dbs:
        d.close()


def test_a_live_lease_holds_and_an_expired_one_is_retaken(db):
    assert leases.take_lease(db, ME, "job-1", HOLDER, T, T + 1000)
    assert not leases.take_lease(db, ME, "job-2", "202@hostB:5", T + 999, T + 5000)
    assert not leases.take_lease(db, ME, "job-2", "202@hostB:5", T + 1000, T + 5000)  # not yet expired
    assert leases.take_lease(db, ME, "job-2", "202@hostB:5", T + 1001, T + 5000)
    assert leases.take_lease(db, "scout", "job-3", HOLDER, T, T + 1000)  # another agent: its own lease
    assert leases.release_lease(db, "job-2") and not leases.release_lease(db, "job-2")
    assert leases.take_lease(db, ME, "job-4", HOLDER, T + 1002, T + 9000)


def _job(db, core, key, now):
    step = step_and_save(db, core, now, [ev(key)])
    (job,) = step.jobs
    return job


def test_interrupted_jobs(db):
    core = Reactor(CFG, ALIASES)
    job = _job(db, core, "note:a", T)
    assert leases.take_lease(db, ME, job.job_id, HOLDER, T, T + 700_000)
    leases.set_job_status(db, job.job_id, "running", T + 1)
    # the same boot (a concurrent scan --once of this host), or another host's live lease: still running
    assert leases.interrupted_jobs(db, T + 10, "999@hostA:1000") == []
    # this host, another boot: the node restarted while it ran
    assert leases.interrupted_jobs(db, T + 10, "5@hostA:2000") == [job.job_id]
    assert db.conn.execute("SELECT count(*) FROM reactor_leases").fetchone()[0] == 0
    exit_, status = db.conn.execute("SELECT exit, status FROM reactor_jobs WHERE job_id = ?", (job.job_id,)).fetchone()
    assert exit_ == "interrupted" and status == "running"  # the core moves the status when told
    # after a restart: the core, reloaded, is told; the events go back to pending once
    again = Reactor(CFG, ALIASES, persist.load_state(db, T + 20, CFG))
    step_and_save(db, again, T + 20, [RunEnded(job.job_id, T + 20, "interrupted")])
    assert db.conn.execute("SELECT status FROM reactor_jobs WHERE job_id = ?", (job.job_id,)).fetchone()[0] == \
        "interrupted"
    assert db.conn.execute("SELECT status FROM reactor_events WHERE dedupe_key = 'note:a'").fetchone()[0] == "pending"
    loaded = persist.load_state(db, T + 30, CFG)
    assert [e.dedupe_key for e in loaded.pending[ME]] == ["note:a"]


def test_an_expired_lease_is_interrupted(db):
    core = Reactor(CFG, ALIASES)
    job = _job(db, core, "note:a", T)
    assert leases.take_lease(db, ME, job.job_id, "7@hostB:1", T, T + 100)
    assert leases.interrupted_jobs(db, T + 50, HOLDER) == []
    assert leases.interrupted_jobs(db, T + 101, HOLDER) == [job.job_id]


def test_a_queued_status_from_the_core_does_not_undo_running(db):
    core = Reactor(CFG, ALIASES)
    job = _job(db, core, "note:a", T)
    leases.take_lease(db, ME, job.job_id, HOLDER, T, T + 1000)
    leases.set_job_status(db, job.job_id, "running", T + 1)
    with db.transaction() as conn:
        persist._write_step(conn, type("S", (), {"changed": type("D", (), {
            "event_status": {}, "seen_again": [], "jobs": [job], "cooldowns": {}, "failures": {}})(),
            "accepted": [], "decisions": [], "escalations": [], "for_person": []})(), T + 2)
    row = db.conn.execute("SELECT status, started_ms FROM reactor_jobs WHERE job_id = ?", (job.job_id,)).fetchone()
    assert row == ("running", T + 1)


def test_retention(db):
    day = 86_400_000
    core = Reactor(CFG, ALIASES)
    step_and_save(db, core, T, stream())
    q = db.conn.execute
    n_decisions = q("SELECT count(*) FROM reactor_decisions").fetchone()[0]
    assert q("SELECT count(*) FROM reactor_decisions WHERE action = 'noise'").fetchone()[0] == 1
    persist.save_step(db, core.step(T + 4 * day, []), T + 4 * day, retention_days=30)
    assert q("SELECT count(*) FROM reactor_decisions WHERE action = 'noise'").fetchone()[0] == 0  # after 3 days
    assert q("SELECT count(*) FROM reactor_decisions").fetchone()[0] >= n_decisions - 1
    persist.save_step(db, core.step(T + 31 * day, []), T + 31 * day, retention_days=30)
    left = {k for (k,) in q("SELECT dedupe_key FROM reactor_events")}
    assert left == {k for (k,) in q("SELECT dedupe_key FROM reactor_events WHERE job_id IN (SELECT job_id FROM"
                                    " reactor_jobs WHERE status = 'queued')")}
    assert left  # the open job's events stay
    # decisions older than 30 days went, except those of open jobs; the expiry decided at day 4 stays
    assert q("SELECT dedupe_key, action FROM reactor_decisions WHERE job_id IS NULL").fetchall() == \
        [("live:quiet:x:1", "expired")]


def test_last_scan(db):
    assert scans.last_scan(db) is None
    scans.mark_scan(db, T, {"events": 3, "jobs": 1})
    assert scans.last_scan(db) == {"events": 3, "jobs": 1, "at_ms": T}


def test_audit_reads(db):
    from meshnode.records.reactor import audit

    core = Reactor(CFG, ALIASES)
    step = step_and_save(db, core, T, stream())
    scans.mark_scan(db, T, {"events": 6})
    st = audit.status(db, T + 1)
    assert st["last_scan"]["at_ms"] == T and st["wakes_last_hour_total"] == len(step.jobs)
    assert {j["job_id"] for j in st["open_jobs"]} == {j.job_id for j in step.jobs}
    assert st["unknown"] == [{"name": "nobody", "events": 1, "last_seen_ms": T, "event_type": "note.direct"}]
    shown = {e["dedupe_key"]: e for e in audit.events(db)}
    assert "note:noise" not in shown and "note:c" not in shown
    assert shown["note:a"]["decision"] in ("woken", "coalesced") and shown["note:a"]["refs"] == {"note_id": 1,
                                                                                                  "thread": "t"}
    assert "note:noise" in {e["dedupe_key"] for e in audit.events(db, all=True)}
    assert [e["dedupe_key"] for e in audit.events(db, agent="scout")] == ["note:b"]
    jid = shown["note:a"]["job_id"]
    one = audit.job(db, jid)
    assert one["status"] == "queued" and isinstance(one["context"], dict)
    assert "note:a" in {e["dedupe_key"] for e in one["event_rows"]}
    ex = audit.explain(db, "note:a")
    assert ex["kind"] == "event" and [d["action"] for d in ex["decisions"]][-1] in ("woken", "coalesced")
    assert ex["jobs"][0]["job_id"] == jid
    assert audit.explain(db, "noise")["event"]["noise"] == "repeat"  # a bare note id: note:<id>
    assert audit.explain(db, jid)["kind"] == "job"
    assert [j["job_id"] for j in audit.jobs(db, status="queued")]
    with pytest.raises(audit.ReactorNotFound):
        audit.job(db, "wake-none")
    with pytest.raises(audit.ReactorNotFound):
        audit.explain(db, "nothing:here")


def test_replay_of_any_prefix_through_reloaded_cores_adds_nothing(tmp_path):
    """A seeded stream of events and run outcomes, saved scan by scan; at every scan a core
    reloaded from the rows and fed the whole stream again adds no event and no escalation,
    and wakes exactly as many agents as a reloaded core fed nothing."""
    import random

    rnd = random.Random(7)
    db = Database(tmp_path / "node.db")
    core = Reactor(CFG, ALIASES)
    agents = [ME, "murr", "scout", "stranger", PEER]
    seen: list = []
    running: list = []
    now = T
    for scan in range(25):
        now += rnd.choice([1_000, 60_000, 3_600_000])
        inputs: list = []
        for _ in range(rnd.randrange(0, 5)):
            e = ev(f"note:{scan}:{len(seen)}", agent=rnd.choice(agents), sev=Severity(rnd.choice([1, 2, 3, 4])),
                   at=now)
            seen.append(e)
            inputs.append(e)
        if seen and rnd.random() < 0.3:
            inputs.append(rnd.choice(seen))  # a sighting again
        for job_id in list(running):
            if rnd.random() < 0.5:
                inputs.append(RunEnded(job_id, now, rnd.choice(["ok", "ok", "error"])))
                running.remove(job_id)
        step = core.step(now, inputs)
        persist.save_step(db, step, now)
        running += [j.job_id for j in step.jobs]
        for c in step.checks:
            found = tuple(Trace(k, kinds[0], "ref", ME, now) for k, kinds, _r, _t in c.events if rnd.random() < 0.5)
            persist.save_step(db, core.step(now, [TracesFound(c.job_id, now, found)]), now)
        quiet = Reactor(CFG, ALIASES, persist.load_state(db, now, CFG)).step(now, [])
        replay = Reactor(CFG, ALIASES, persist.load_state(db, now, CFG)).step(now, list(seen))
        assert replay.accepted == [], scan
        assert len(replay.jobs) == len(quiet.jobs) and replay.escalations == quiet.escalations, scan
        assert {d.action for d in replay.decisions} - {d.action for d in quiet.decisions} <= {"duplicate"}, scan
    assert db.conn.execute("SELECT count(*) FROM reactor_jobs").fetchone()[0] > 3
    db.close()


def test_an_event_dropped_by_its_nudge_cooldown_is_not_pending_after_a_reload(db):
    from dataclasses import replace

    cfg = replace(CFG, wake_cooldown_hours=0)
    due = dict(etype="task.due", kinds=(TraceKind.TASK_UPDATE,))
    core = Reactor(cfg, ALIASES)
    step_and_save(db, core, T, [replace(ev("task_due:L1:1", **due), subject="L1")])
    step = step_and_save(db, core, T + 1000, [replace(ev("task_due:L1:2", **due), subject="L1")])
    assert [d.action for d in step.decisions if d.dedupe_key == "task_due:L1:2"] == ["held_cooldown"]
    assert db.conn.execute("SELECT status FROM reactor_events WHERE dedupe_key = 'task_due:L1:2'").fetchone()[0] == \
        "dropped"
    loaded = persist.load_state(db, T + 2000, cfg)
    assert "task_due:L1:2" not in {e.dedupe_key for evs in loaded.pending.values() for e in evs}
    assert "task_due:L1:2" in loaded.seen  # still a duplicate if seen again
    # reloaded after the nudge cooldown: the dropped event does not come back into a wake
    again = Reactor(cfg, ALIASES, persist.load_state(db, T + cfg.nudge_cooldown_ms + 1, cfg))
    step = again.step(T + cfg.nudge_cooldown_ms + 1, [])
    assert all("task_due:L1:2" not in j.events for j in step.jobs)


def test_a_second_interruption_across_a_restart_counts_as_a_failure(db):
    core = Reactor(CFG, ALIASES)
    job = _job(db, core, "note:a", T)
    # first interruption, then a restart: the event is pending again, its job re-made by the new core
    again = Reactor(CFG, ALIASES, persist.load_state(db, T + 20, CFG))
    step_and_save(db, again, T + 20, [RunEnded(job.job_id, T + 20, "interrupted")])
    assert db.conn.execute("SELECT until_ms FROM reactor_cooldowns WHERE key = 'int:note:a'").fetchone() is not None
    now = T + CFG.wake_cooldown_ms + 30
    third = Reactor(CFG, ALIASES, persist.load_state(db, now, CFG))
    (job2,) = step_and_save(db, third, now, []).jobs
    assert job2.events == ("note:a",)
    # second interruption after another restart: a failure, escalated to the mentor
    fourth = Reactor(CFG, ALIASES, persist.load_state(db, now + 10, CFG))
    step = step_and_save(db, fourth, now + 10, [RunEnded(job2.job_id, now + 10, "interrupted")])
    acts = [d.action for d in step.decisions if d.dedupe_key == "note:a"]
    assert acts[:2] == ["interrupted", "escalated"] and step.jobs == []
    assert [(x.to_id, x.level) for x in step.escalations] == [(MENTOR, 1)]


def test_a_lease_its_own_holder_failed_to_release_does_not_refuse_that_holder(db):
    assert leases.take_lease(db, ME, "job-1", HOLDER, T, T + 60_000)  # the run ended; the release failed
    assert not leases.take_lease(db, ME, "job-2", "202@hostB:5", T + 10, T + 5000)  # another process: held
    assert leases.take_lease(db, ME, "job-2", HOLDER, T + 10, T + 5000)  # the driver asks only when idle
