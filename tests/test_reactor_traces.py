"""Trace check (design 10.1) and final report check (10.2) over real rows."""

from __future__ import annotations

import pytest

from meshnode.domain.notes import make_note, own_local
from meshnode.engines.reactor import adapters, traces
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import FinalReport, TraceCheck, TraceKind
from meshnode.store import Database
from tests.gmp_fixtures import HOUR, A, B, Story, World

ME = B.did
CFG = ReactorConfig(self_id=ME, local_agents=frozenset({ME}))
T = 1_780_000_000_000


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    yield d
    d.close()


def put(db, c, local=None):
    assert db.put_container(c, received_at_ms=c.timestamp_ms, local=local)
    return c


def check_of(events, since, agent=ME, job="wake-1"):
    return TraceCheck(job_id=job, agent=agent, since_ms=since,
                      events=tuple((e.dedupe_key, e.required_trace, e.refs, e.event_type) for e in events))


def kinds(found):
    return {t.event_key: t.kind for t in found}


def reply(db, text, t, *, to=A, topic=None):
    return put(db, make_note(B, text, now_ms=t, source="llm", audience="friends", recipients=[to.did], topic=topic),
               own_local())


def inbound(db, t):
    put(db, make_note(A, "please send me the east side measurements", now_ms=t, audience="friends",
                      recipients=[B.did]))
    (e,) = adapters.scan(db, t + 1, CFG, self_did=ME)
    return e


def test_message_counts_and_status_only_does_not(db):
    e = inbound(db, T)
    check = check_of([e], T + 10)
    assert traces.find(db, check, T + 100, self_did=ME) == []
    reply(db, "ok, will do", T + 20)                              # status-only: no trace
    reply(db, "Noted!", T + 21)
    assert traces.find(db, check, T + 100, self_did=ME) == []
    r = reply(db, "The east side measurements are 41.2 m and 39.8 m, attached in the log.", T + 30)
    (t,) = traces.find(db, check, T + 100, self_did=ME)
    assert t.kind is TraceKind.MESSAGE and t.ref == r.did and t.event_key == e.dedupe_key and t.by == ME


def test_a_reply_before_the_job_started_does_not_count(db):
    e = inbound(db, T)
    reply(db, "The east side measurements are 41.2 m and 39.8 m, attached in the log.", T + 5)
    assert traces.find(db, check_of([e], T + 10), T + 100, self_did=ME) == []


def test_ack_quotes_the_note(db):
    e = inbound(db, T)
    ack_only = check_of([e.__class__(**{**{f: getattr(e, f) for f in e.__slots__},
                                        "required_trace": (TraceKind.ACK,)})], T + 10)
    reply(db, "I read a different note and this answers nothing in particular.", T + 20, topic="other")
    assert traces.find(db, ack_only, T + 100, self_did=ME) == []
    reply(db, f"About {e.subject}: I have it and will measure tomorrow morning.", T + 30)
    assert kinds(traces.find(db, ack_only, T + 100, self_did=ME)) == {e.dedupe_key: TraceKind.ACK}


def test_blocker_note_needs_a_reason(db):
    e = inbound(db, T)
    check = check_of([e], T + 10)
    put(db, make_note(B, "#blocker", now_ms=T + 20, source="llm"), own_local())
    assert traces.find(db, check, T + 100, self_did=ME) == []
    put(db, make_note(B, "#blocker the laser meter is broken until Monday", now_ms=T + 30, source="llm"),
        own_local())
    assert kinds(traces.find(db, check, T + 100, self_did=ME)) == {e.dedupe_key: TraceKind.BLOCKER}


def test_an_offer_is_answered_by_acceptance_or_refusal_not_by_the_receipt(db):
    w = World(T)
    g = put(db, w.ok(w.goal()))
    t1 = put(db, w.ok(w.task(g)))
    put(db, w.ok(w.offer(t1.did, t1, to=(B,))))
    (e,) = [x for x in adapters.scan(db, w.t, CFG, self_did=ME) if x.event_type == "task.offer"]
    check = check_of([e], w.t)
    assert traces.find(db, check, w.t, self_did=ME) == []
    put(db, w.ok(w.entry(B, "receipt", t1.did, received=e.refs["offer"], received_at=w.t)))
    assert traces.find(db, check, w.t, self_did=ME) == []  # signed on arrival: not the agent's answer
    put(db, w.ok(w.entry(B, "refusal", t1.did, offer=e.refs["offer"])))
    assert kinds(traces.find(db, check, w.t, self_did=ME)) == {e.dedupe_key: TraceKind.RECEIPT}


def test_task_update_and_resolved(db):
    s = Story(World(T))
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        put(db, c)
    due_at = db.conn.execute("SELECT due_at_ms FROM tasks WHERE lineage = ?", (s.lineage,)).fetchone()[0]
    (e,) = [x for x in adapters.scan(db, due_at, CFG, self_did=ME) if x.event_type == "task.due"]
    since = s.w.t + 1
    check = check_of([e], since)
    assert traces.find(db, check, due_at, self_did=ME) == []
    t4 = put(db, s.w.ok(s.by(B, [s.t3], progress=0.5, reason="check_in")))
    (t,) = traces.find(db, check, due_at, self_did=ME)
    assert t.kind is TraceKind.TASK_UPDATE and t.ref == t4.did
    # completed meanwhile (here by B too; by anyone): the subject resolved by itself
    put(db, s.w.ok(s.by(B, [t4], status="completed", reason="completed")))
    assert kinds(traces.find(db, check, due_at, self_did=ME)) == {e.dedupe_key: TraceKind.RESOLVED}


def test_heartbeat_and_decision(db):
    db.conn.execute("INSERT INTO agent_peers (id) VALUES (?)", (A.did,))
    (dead,) = adapters.liveness_events(
        [__import__("meshnode.net.liveness", fromlist=["Change"]).Change(A.did, "stale", "dead", T + 72 * HOUR)],
        T + 72 * HOUR, CFG, last_heard={A.did: T})
    db.conn.execute("INSERT INTO peer_liveness (did, state, last_heard_ms, changed_at_ms) VALUES (?, 'dead', ?, ?)",
                    (A.did, T, T))
    check = check_of([dead], T + 72 * HOUR)
    assert traces.find(db, check, T + 73 * HOUR, self_did=ME) == []
    db.conn.execute("UPDATE peer_liveness SET last_heard_ms = ? WHERE did = ?", (T + 73 * HOUR, A.did))
    assert kinds(traces.find(db, check, T + 73 * HOUR, self_did=ME)) == {dead.dedupe_key: TraceKind.RESOLVED}

    db.conn.execute("INSERT INTO gate_confirmations (session, tool, args, risk, reason, created_ms, expires_ms)"
                    " VALUES ('s', 'w', '{}', 'destructive', 'r', ?, ?)", (T, T + HOUR))
    (conf,) = [x for x in adapters.scan(db, T + 1, CFG, self_did=ME) if x.event_type == "person.confirmation"]
    check = check_of([conf], T)
    assert traces.find(db, check, T + 2, self_did=ME) == []
    db.conn.execute("UPDATE gate_confirmations SET status = 'approved', decided_ms = ?", (T + 2,))
    assert kinds(traces.find(db, check, T + 2, self_did=ME)) == {conf.dedupe_key: TraceKind.DECISION}
    db.conn.execute("UPDATE gate_confirmations SET status = 'expired'")
    assert kinds(traces.find(db, check, T + 2, self_did=ME)) == {conf.dedupe_key: TraceKind.RESOLVED}


def test_blocked_report_is_a_blocker(db):
    e = inbound(db, T)
    db.conn.execute("INSERT INTO reactor_jobs (job_id, agent, priority, reason, status, created_ms, max_runtime_s,"
                    " required_trace, events, dedupe_key, report, job) VALUES ('wake-1', ?, 2, '[]', 'checking', ?,"
                    " 600, '[]', '[]', 'k', ?, '{}')",
                    (ME, T, '{"blocked": true, "blocked_reason": "waiting for the vendor to ship the part"}'))
    assert kinds(traces.find(db, check_of([e], T + 10), T + 100, self_did=ME)) == {e.dedupe_key: TraceKind.BLOCKER}


def report(**kw):
    base = dict(processed_messages=(), task_updates=(), outgoing_messages=(), blocked=False, blocked_reason="",
                needs_human=False, next_check_at_ms=None)
    return FinalReport(**{**base, **kw})


def test_check_report_mismatches(db):
    e = inbound(db, T)
    note_id = e.refs["note_id"]
    r = reply(db, "The east side measurements are 41.2 m and 39.8 m, attached in the log.", T + 30)
    ok = report(processed_messages=(str(note_id),), outgoing_messages=(r.did,))
    assert traces.check_report(db, ok, T + 10, self_did=ME, agent=ME) == ()
    lying = report(processed_messages=("99999",), outgoing_messages=("did:hmp:container:nothing",),
                   task_updates=("did:hmp:container:notask",))
    bad = traces.check_report(db, lying, T + 10, self_did=ME, agent=ME)
    assert len(bad) == 3 and "99999: no such note" in bad[0]
    # a note the agent did not answer, and one it did not write
    other = put(db, make_note(A, "another question entirely, unanswered", now_ms=T + 40, audience="friends",
                              recipients=[B.did]))
    claimed = report(processed_messages=(other.did,), outgoing_messages=(other.did,))
    bad = traces.check_report(db, claimed, T + 35, self_did=ME, agent=ME)
    assert "no reply or ack" in bad[0] and "not written by" in bad[1]


def test_a_remote_mentors_answer_to_the_escalation(db):
    from meshnode.net.liveness import Change

    from tests.gmp_fixtures import C

    (dead,) = adapters.liveness_events([Change(A.did, "stale", "dead", T)], T, CFG, last_heard={A.did: T - HOUR})
    esc_key = f"esc:mentor:{A.did}:{dead.dedupe_key}"
    db.conn.execute("INSERT INTO reactor_escalations (key, agent, to_id, level, event_key, sent_ms) VALUES"
                    " (?, ?, ?, 1, ?, ?)", (esc_key, A.did, C.did, dead.dedupe_key, T))
    check = check_of([dead], T, agent=A.did, job="watch-1")
    put(db, make_note(C, "ok", now_ms=T + 10, topic="reactor-escalation", audience="friends", recipients=[B.did]))
    assert traces.find(db, check, T + 100, self_did=ME) == []  # status-only
    answer = put(db, make_note(C, f"I called A's operator; its disk died, back tomorrow.\n{esc_key}", now_ms=T + 20,
                               topic="reactor-escalation", audience="friends", recipients=[B.did]))
    (t,) = traces.find(db, check, T + 100, self_did=ME)
    assert t.kind is TraceKind.ACK and t.ref == answer.did and t.by == C.did


def test_unanswered_thread_trace_is_a_message_in_its_topic(db):
    put(db, make_note(A, "where are the east side numbers?", now_ms=T, audience="friends", recipients=[B.did],
                      topic="bridge"))
    (u,) = [e for e in adapters.scan(db, T + 25 * HOUR, CFG, self_did=ME) if e.event_type == "thread.unanswered"]
    check = check_of([u], T + 25 * HOUR)
    put(db, make_note(B, "The east side numbers: 41.2 m and 39.8 m, measured this morning.", now_ms=T + 26 * HOUR,
                      source="llm", topic="bridge"), own_local())
    assert kinds(traces.find(db, check, T + 27 * HOUR, self_did=ME)) == {u.dedupe_key: TraceKind.MESSAGE}


def test_a_plug_in_s_heartbeat_refs_that_are_not_a_time_do_not_raise(db):
    from meshnode.engines.reactor import plugins

    line = ('{"event_type": "beat", "subject": "pump", "dedupe_key": "k1", "severity": "P3", "summary": "pump quiet",'
            f' "required_trace": ["heartbeat"], "refs": {{"did": "{A.did}", "last_heard_ms": "yesterday"}}}}')
    (e,), errors = plugins.parse_lines("mon", line, {}, T)
    assert errors == []
    db.conn.execute("INSERT INTO agent_peers (id) VALUES (?)", (A.did,))
    db.conn.execute("INSERT INTO peer_liveness (did, state, last_heard_ms, changed_at_ms) VALUES (?, 'ok', ?, ?)",
                    (A.did, T + 5, T + 5))
    assert kinds(traces.find(db, check_of([e], T), T + 10, self_did=ME)) == {e.dedupe_key: TraceKind.HEARTBEAT}
