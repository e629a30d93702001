"""The reactor's built-in adapters over real rows (notes, GMP, gate, held commands, liveness)."""

from __future__ import annotations

import json

import pytest

from meshnode.net.liveness import Change, Liveness
from meshnode.domain.notes import make_note, own_local
from meshnode.engines.reactor import adapters, adapters_tasks, handled
from meshnode.engines.reactor.aliases import AliasRegistry
from meshnode.base.config.reactor import ReactorConfig
from meshnode.store import Database
from tests.gmp_fixtures import HOUR, A, B, C, Story, World

ME = B.did  # this node
CFG = ReactorConfig(self_id=ME, local_agents=frozenset({ME, "scout"}))


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    yield d
    d.close()


def put(db: Database, c, local=None):
    assert db.put_container(c, received_at_ms=c.timestamp_ms, local=local)
    return c


def note(db, key, text, t, *, to=(), local=None, **kw):
    c = make_note(key, text, now_ms=t, audience="friends" if to else kw.pop("audience", "private"),
                  recipients=[k.did for k in to] or None, **kw)
    return put(db, c, local)


def by_type(events):
    out: dict[str, list] = {}
    for e in events:
        out.setdefault(e.event_type, []).append(e)
    return out


def scan(db, now, cfg=CFG, **kw):
    errors: list[str] = []
    out = adapters.scan(db, now, cfg, self_did=ME, errors=errors, **kw)
    assert errors == []
    return out


T = 1_780_000_000_000


def test_notes_addressed_by_recipient_mention_and_the_person(db):
    direct = note(db, A, "please review the bridge plan", T, to=[B, C])
    question = note(db, C, "can you take the next step?", T + 1, to=[B])
    note(db, A, "public musing about nothing", T + 2, audience="public")            # not addressed
    mention = note(db, A, "@scout have a look at the logs", T + 3, audience="public")
    person = note(db, B, "remind me to call the vendor", T + 4, source="cli")       # the person's own
    note(db, B, "my own thought", T + 5, source="llm", local=own_local())          # own: nothing
    note(db, B, "@scout system notice", T + 6, source="system", local=own_local())  # own: nothing
    found = {e.dedupe_key: e for e in scan(db, T + 10)}
    assert set(found) == {f"note:{direct.did}", f"note:{question.did}", f"note:{mention.did}",
                          f"note:{person.did}"}
    assert found[f"note:{direct.did}"].event_type == "note.direct"
    assert found[f"note:{direct.did}"].agent == ME
    assert found[f"note:{question.did}"].event_type == "note.question"
    assert found[f"note:{mention.did}"].agent == "scout"
    assert found[f"note:{person.did}"].agent == ME
    assert all(e.noise == "" for e in found.values())
    assert found[f"note:{direct.did}"].refs["author"] == A.did


def test_read_notes_are_not_events_and_priority_makes_p1(db):
    c = make_note(A, "urgent: the bridge is down", now_ms=T, audience="friends", recipients=[B.did], priority=2)
    put(db, c)
    (e,) = scan(db, T + 10)
    assert int(e.severity) == 1
    db.conn.execute("UPDATE notes SET read = 1")
    assert scan(db, T + 10) == []


def test_aliases_route_legacy_mentions_and_keep_unknown_raw(db):
    aliases = AliasRegistry.from_mapping({"agents": {"scout": {"aliases": ["murr"]},
                                                     C.did: {"aliases": ["carol"]}}}, self_id=ME)
    n1 = note(db, A, "@murr the logs again", T, audience="public")
    n2 = note(db, A, "@carol not for this node", T + 1, audience="public")
    n3 = note(db, A, "@nobody_known who is this", T + 2, audience="public")
    found = {e.dedupe_key: e for e in scan(db, T + 10, aliases=aliases)}
    assert found[f"note:{n1.did}"].agent == "scout"
    assert f"note:{n2.did}" not in found          # resolves to a peer, not a local agent
    assert found[f"note:{n3.did}"].agent == "nobody_known"  # unknown: the core reports it


def test_escalation_note_uses_its_own_key(db):
    text = "B did not answer, expected a message\n\ndedupe: esc:mentor:did:key:zX:note:abc\n#reactor #escalation"
    note(db, A, text, T, to=[B], topic="reactor-escalation", source="system")
    (e,) = scan(db, T + 10)
    assert e.event_type == "note.escalation"
    assert e.dedupe_key == "esc:mentor:did:key:zX:note:abc"
    assert e.noise == ""  # an escalation: neither synthetic (source system) nor own (#reactor)


def test_noise_filters(db):
    cfg = ReactorConfig(self_id=ME, local_agents=frozenset({ME}), flood_per_author_hour=3,
                        ignore_subjects=("^\\[auto\\]",))
    tagged = note(db, A, "weekly #digest of things", T, to=[B])
    subject = note(db, A, "[auto] nightly report", T + 1, to=[B])
    first = note(db, C, "same words again", T + 2, to=[B])
    again = note(db, C, "Same words   again", T + 3, to=[B])
    old = note(db, A, "an old note from the backlog", T - 14 * 24 * HOUR - 12 * HOUR, to=[B])
    floods = [note(db, C, f"flood number {i}", T + 10 + i, to=[B]) for i in range(5)]
    found = {e.dedupe_key: e for e in scan(db, T + 1000, cfg)}
    assert found[f"note:{tagged.did}"].noise == "ignore_tags"
    assert found[f"note:{subject.did}"].noise == "ignore_subjects"
    assert found[f"note:{first.did}"].noise == ""
    assert found[f"note:{again.did}"].noise == "repeat"
    assert found[f"note:{old.did}"].noise == "archive"
    # C wrote 2 + 5 notes within the hour: beyond 3, flood; they become one note.flood event
    assert [found[f"note:{f.did}"].noise for f in floods] == ["", "flood", "flood", "flood", "flood"]
    (flood,) = [e for e in found.values() if e.event_type == "note.flood"]
    assert flood.noise == "" and flood.refs["count"] == 4 and flood.agent == ME


def test_unanswered_thread_until_this_node_writes_in_it(db):
    now = T + 30 * HOUR
    n = note(db, A, "status of the bridge?", T, to=[B], topic="bridge")
    db.conn.execute("UPDATE notes SET read = 1")  # read, but not answered
    ev = by_type(scan(db, now))
    (u,) = ev["thread.unanswered"]
    assert u.dedupe_key == f"unanswered:{ME}:bridge:{n.did}" and u.agent == ME
    note(db, B, "the bridge is at 80 %, tests pending on the east side", T + HOUR, topic="bridge", source="llm",
         local=own_local())
    assert "thread.unanswered" not in by_type(scan(db, now))


def test_offer_until_answered(db):
    w = World(T)
    s = Story.__new__(Story)
    s.w = w
    g = put(db, w.ok(w.goal()))
    t1 = put(db, w.ok(w.task(g)))
    offer = put(db, w.ok(w.offer(t1.did, t1, to=(B,))))
    (e,) = by_type(scan(db, w.t))["task.offer"]
    assert e.dedupe_key == f"offer:{t1.did}:{offer.did}" and e.agent == ME and e.refs["from"] == A.did
    put(db, w.ok(w.entry(B, "receipt", t1.did, received=offer.did, received_at=w.t)))
    assert by_type(scan(db, w.t))["task.offer"] == [e]  # the node's automatic receipt is no answer
    put(db, w.ok(w.entry(B, "acceptance", t1.did, offer=offer.did)))
    assert "task.offer" not in by_type(scan(db, w.t))


def _held_story(db):
    s = Story(World(T))
    for c in (s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3):
        put(db, c)
    return s


def test_task_due_overdue_and_stale_for_the_holder(db):
    s = _held_story(db)
    row = db.conn.execute("SELECT due_at_ms, overdue_at_ms FROM tasks WHERE lineage = ?", (s.lineage,)).fetchone()
    due_at, overdue_at = row
    assert "task.due" not in by_type(scan(db, due_at - 1))
    (due,) = by_type(scan(db, due_at))["task.due"]
    assert due.dedupe_key == f"task_due:{s.lineage}:{ME}:{due_at}"
    ev = by_type(scan(db, overdue_at))
    assert ev["task.overdue"][0].dedupe_key == f"task_overdue:{s.lineage}:{ME}:{overdue_at}"
    assert "task.stale" not in ev
    stale = by_type(scan(db, overdue_at + 25 * HOUR))["task.stale"][0]
    assert stale.suggested_route == "mentor" and stale.dedupe_key == f"task_stale:{s.lineage}:{ME}:{overdue_at}"


def test_task_events_for_the_creator(db):
    s = _held_story(db)
    me_a = ReactorConfig(self_id=A.did, local_agents=frozenset({A.did}))
    ev = by_type(adapters.scan(db, s.w.t, me_a, self_did=A.did, liveness={B.did: "dead"}))
    (dead,) = ev["task.holder_dead"]
    assert dead.dedupe_key == f"task_holder_dead:{s.lineage}:{B.did}" and dead.agent == A.did
    # an unheld task of A's: t4 releases it
    put(db, s.w.ok(s.by(B, [s.t3], assigned=[], status="pending", reason="released")))
    assert "task.unheld" not in by_type(adapters.scan(db, s.w.t, me_a, self_did=A.did))  # just released: a grace
    ev = by_type(adapters.scan(db, s.w.t + adapters_tasks.UNHELD_GRACE_MS, me_a, self_did=A.did))
    (unheld,) = ev["task.unheld"]
    assert unheld.dedupe_key.startswith(f"task_unassigned:{s.lineage}:")
    assert by_type(scan(db, s.w.t)).get("task.due") is None  # B holds nothing now


def test_a_dead_holder_is_signalled_when_seen_so_the_creator_s_own_versions_do_not_settle_it(db):
    """The creator's node signed the versions of the task (the one assigning B on its acceptance): they
    came before B died, so they answer nothing; the wake must reach the creator's agent (issue 37's team
    scenario: it was settled unseen, "every event was handled before the run began")."""
    s = _held_story(db)
    me_a = ReactorConfig(self_id=A.did, local_agents=frozenset({A.did}))
    seen = s.w.t + 60_000
    (dead,) = by_type(adapters.scan(db, seen, me_a, self_did=A.did, liveness={B.did: "dead"}))["task.holder_dead"]
    assert dead.at_ms == seen
    assert handled.handled_keys(db, A.did, [dead], seen, self_did=A.did) == set()


def test_person_confirmation_draft_held(db):
    q = db.conn.execute
    q("INSERT INTO gate_confirmations (session, tool, args, risk, reason, created_ms, expires_ms) VALUES"
      " ('s', 'write_file', '{}', 'destructive', 'overwrites a file', ?, ?)", (T, T + 10 * 60_000))
    q("INSERT INTO gate_confirmations (session, tool, args, risk, reason, status, created_ms, expires_ms) VALUES"
      " ('s', 'x', '{}', 'destructive', 'r', 'approved', ?, ?)", (T, T + HOUR))
    q("INSERT INTO gate_drafts (session, path, content, created_ms, updated_ms) VALUES ('s', 'a.txt', x'00', ?, ?)",
      (T, T))
    q("INSERT INTO gate_drafts (session, path, content, created_ms, updated_ms) VALUES ('s', 'b.txt', x'00', ?, ?)",
      (T, T))
    q("INSERT INTO gate_submissions (session, summary, ready, drafts, created_ms) VALUES ('s', 'done', 1, ?, ?)",
      (json.dumps(["a.txt"]), T))
    q("INSERT INTO held_commands (tick, cmd_id, type, command, kind, reason, created_ms) VALUES"
      " (1, 'c1', 'send_note', '{}', 'rejected', 'the validators refused it', ?)", (T,))
    ev = by_type(scan(db, T + 60_000))
    (conf,) = ev["person.confirmation"]
    assert conf.dedupe_key.startswith("confirm:") and int(conf.severity) == 1  # expires within 15 min
    assert conf.suggested_route == "operator"
    (draft,) = ev["person.draft"]           # b.txt was never submitted
    assert draft.refs["path"] == "a.txt"
    assert ev["person.held"][0].dedupe_key.startswith("held:")
    assert "person.confirmation" not in by_type(scan(db, T + 11 * 60_000))  # expired: nothing to decide


def test_liveness_events_keyed_by_episode():
    heard = {A.did: T}
    changes = [Change(A.did, Liveness.OK, Liveness.QUIET, T + 6 * HOUR),
               Change(A.did, Liveness.QUIET, Liveness.STALE, T + 24 * HOUR),
               Change(A.did, Liveness.STALE, Liveness.DEAD, T + 72 * HOUR),
               Change(C.did, None, Liveness.OK, T)]
    out = adapters.liveness_events(changes, T + 72 * HOUR, CFG, last_heard=heard)
    assert [e.dedupe_key for e in out] == [f"live:quiet:{A.did}:{T}", f"live:stale:{A.did}:{T}",
                                          f"live:dead:{A.did}:{T}"]
    assert out[2].suggested_route == "mentor" and out[0].required_trace[0].value == "none"
    back = adapters.liveness_events([Change(A.did, Liveness.DEAD, Liveness.OK, T + 80 * HOUR)], T, CFG,
                                    last_heard={A.did: T + 80 * HOUR})
    assert back[0].dedupe_key == f"live:back:{A.did}:{T + 80 * HOUR}"
    assert adapters.liveness_events([Change(A.did, Liveness.QUIET, Liveness.OK, T)], T, CFG) == []


def test_task_fork(db):
    s = _held_story(db)
    put(db, s.w.ok(s.by(A, [s.t2], title="build the east adapter", reason="edited")))  # A edits as B starts
    lin = s.lineage
    due_at, forks = db.conn.execute("SELECT due_at_ms, forks FROM tasks WHERE lineage = ?", (lin,)).fetchone()
    assert forks == 1
    ev = by_type(scan(db, due_at))
    (fork,) = ev["task.fork"]
    assert fork.dedupe_key == f"task_fork:{lin}:1" and fork.required_trace == (adapters.TraceKind.TASK_UPDATE,)


def test_a_failing_adapter_does_not_stop_the_others(db):
    n = note(db, A, "please review the bridge plan", T, to=[B])
    db.conn.execute("DROP TABLE held_commands")
    errors: list[str] = []
    found = adapters.scan(db, T + 10, CFG, self_did=ME, errors=errors)
    assert [e.dedupe_key for e in found] == [f"note:{n.did}"]
    assert len(errors) == 1 and errors[0].startswith("person: ") and "held_commands" in errors[0]
    assert not db.conn.in_transaction


def _step_and_save(db, now, events, cfg=CFG):
    from meshnode.engines.reactor import persist
    from meshnode.engines.reactor.core import Reactor

    core = Reactor(cfg, AliasRegistry.from_mapping({}, self_id=ME), persist.load_state(db, now, cfg))
    step = core.step(now, events)
    persist.save_step(db, step, now, retention_days=cfg.retention_days)
    return step


def test_a_big_unread_backlog_drains_oldest_first_across_scans(db, monkeypatch):
    from meshnode.engines.reactor import adapters_notes

    monkeypatch.setattr(adapters_notes, "MAX_NOTES", 3)
    aliases = AliasRegistry.from_mapping({"agents": {C.did: {"aliases": ["carol"]}}}, self_id=ME)
    for i in range(4):  # older notes naming a peer only: never events, and they must not block the queue
        note(db, A, f"@carol peer business {i}", T - 100 + i, audience="public")
    dids = [note(db, A, f"backlog note number {i}", T + i * 1000, to=[B]).did for i in range(7)]
    seen: list[str] = []
    for n in range(4):
        now = T + 60_000 + n
        evs = adapters.scan(db, now, CFG, self_did=ME, aliases=aliases, errors=[])
        got = [e.dedupe_key for e in evs if e.event_type.startswith("note.")]
        assert len(got) <= 3
        seen += got
        _step_and_save(db, now, evs)
    assert seen == [f"note:{d}" for d in dids]  # every note once, oldest first


def test_an_old_unread_note_is_not_new_again_after_the_dedupe_window(db):
    cfg = ReactorConfig(self_id=ME, local_agents=frozenset({ME}), dedupe_days=7, retention_days=30)
    c = note(db, A, "please look at the invoice", T, to=[B])
    step = _step_and_save(db, T + 1000, scan(db, T + 1000, cfg), cfg)
    assert [e.dedupe_key for e in step.accepted] == [f"note:{c.did}"]
    # the node was off for 10 days (past dedupe_days, within retention and max_note_age_days): still unread
    later = T + 2 * 24 * HOUR  # unanswered for a day: its own episode, once
    assert [e.event_type for e in _step_and_save(db, later, scan(db, later, cfg), cfg).accepted] == \
        ["thread.unanswered"]
    later = T + 10 * 24 * HOUR
    assert scan(db, later, cfg) == []
    assert _step_and_save(db, later, scan(db, later, cfg), cfg).accepted == []


def test_the_read_window_never_outlives_the_event_rows(db):
    # retention shorter than the archive window: once the row is pruned, the note is too old to be read
    cfg = ReactorConfig(self_id=ME, local_agents=frozenset({ME}), dedupe_days=1, retention_days=3)
    c = note(db, A, "the weekly #digest of the router", T, to=[B])  # noise: no open job keeps its row
    assert [e.dedupe_key for e in _step_and_save(db, T + 1000, scan(db, T + 1000, cfg), cfg).accepted] == \
        [f"note:{c.did}"]
    later = T + 4 * 24 * HOUR
    _step_and_save(db, later, [], cfg)  # prunes the row (last seen 4 days ago, retention 3)
    assert db.conn.execute("SELECT count(*) FROM reactor_events").fetchone()[0] == 0
    assert scan(db, later, cfg) == []


def test_noise_facts_normalize_each_note_once_and_keep_the_24h_window(db, monkeypatch):
    from meshnode.engines.reactor import adapters_notes

    calls = []
    real = adapters_notes.normalized_text
    monkeypatch.setattr(adapters_notes, "normalized_text", lambda t: calls.append(1) or real(t))
    cfg = ReactorConfig(self_id=ME, local_agents=frozenset({ME}), flood_per_author_hour=1000)
    old = note(db, C, "the same words", T - 25 * HOUR, to=[B])            # more than 24 h before: no repeat
    first = note(db, C, "The same   words", T, to=[B])
    again = note(db, C, "the same words", T + 5, to=[B])
    for i in range(150):
        note(db, C, f"distinct note {i}", T + 10 + i, to=[B])
    found = {e.dedupe_key: e for e in adapters_notes.note_events(db, T + 1000, cfg, self_did=ME)}
    assert found[f"note:{old.did}"].noise == "" and found[f"note:{first.did}"].noise == ""
    assert found[f"note:{again.did}"].noise == "repeat"
    # linear: each of the author's notes in the window once, plus each row of the scan; not rows x notes
    assert len(calls) <= 2 * 153 + 10


def test_a_batched_escalation_note_gives_one_event_per_dedupe_line(db):
    keys = [f"esc:mentor:did:key:zX:note:{i}" for i in range(3)]
    text = "\n\n".join(f"C left no trace for note {i}\ndedupe: {k}" for i, k in enumerate(keys)) + "\n#reactor #escalation"
    note(db, A, text, T, to=[B], topic="reactor-escalation", source="system")
    found = scan(db, T + 10)
    assert [e.dedupe_key for e in found] == keys
    assert {e.event_type for e in found} == {"note.escalation"} and all(e.noise == "" for e in found)
    _step_and_save(db, T + 10, found)
    assert scan(db, T + 20) == []  # known: not read again


def test_a_batched_escalation_note_is_one_event_per_key_at_the_mentor(db):
    """The sender's escalate.batches/build (one note per recipient and level) and this node's
    adapter agree: each escalation in the note keeps its own dedupe key, nothing is merged."""
    from meshnode.engines.reactor import escalate
    from meshnode.engines.reactor.types import Escalation

    def esc(i, to=B.did, level=1):
        return Escalation(key=f"esc:mentor:{C.did}:note:n{i}", agent=C.did, to_id=to, level=level,
                          event_key=f"note:n{i}", event_type="note.direct", subject=f"n{i}",
                          text=f"{C.did} left no trace for note n{i}", job_id="wake-x", at_ms=T)
    many = [esc(i) for i in range(escalate.MAX_BATCH + 3)] + [esc(99, level=2), esc(98, to="operator", level=2)]
    groups = escalate.batches(many)
    assert [len(g) for g in groups] == [escalate.MAX_BATCH, 3, 1, 1]
    assert {(g[0].to_id, g[0].level) for g in groups} == {(B.did, 1), (B.did, 2), ("operator", 2)}
    fields = escalate.note_fields(groups[0])  # A's reactor escalates to its mentor B (this node)
    first = make_note(A, fields["text"], now_ms=T, topic=fields["topic"], source="system", audience=fields["audience"],
                      priority=fields["priority"], recipients=fields["recipients"])
    assert first.head["recipient"] == [B.did]
    put(db, first, None)
    events = scan(db, T + 10)
    assert sorted(e.dedupe_key for e in events) == sorted(x.key for x in groups[0])
    assert {e.event_type for e in events} == {"note.escalation"}


def test_an_open_offer_wakes_the_candidate_not_the_creator(db):
    """Right after delegating, the creator waits for the candidate's answer: nothing to act on."""
    w = World(T)
    g = put(db, w.ok(w.goal()))
    t1 = put(db, w.ok(w.task(g)))
    put(db, w.ok(w.offer(t1.did, t1, to=(B,), expires_ms=3 * HOUR)))
    me_a = ReactorConfig(self_id=A.did, local_agents=frozenset({A.did}))
    later = w.t + adapters_tasks.UNHELD_GRACE_MS + HOUR
    assert [e.event_type for e in adapters.scan(db, later, me_a, self_did=A.did)] == []
    assert "task.offer" in by_type(scan(db, later))  # the candidate (this node, B) is woken


# --- flood counters per actor, and the chat's grace (issue 33) -----------------------------------


def _for(db, actor, text, t, topic=None):
    """A note this node wrote for ``actor`` (an app Actor), unread: what chat, MCP and A2A store."""
    from meshnode.app.actions.notes import local_fields
    from meshnode.app.actor import signed_source

    return note(db, B, text, t, topic=topic, source=signed_source(actor), local=local_fields(actor, read=False))


def test_flood_counters_are_per_actor_not_the_node_s_own_did(db):
    from meshnode.app import actor

    cfg = ReactorConfig(self_id=ME, local_agents=frozenset({ME}), flood_per_author_hour=3)
    bob, eve = actor.a2a("k-bob", "bob"), actor.a2a("k-eve", "eve")
    eves = [_for(db, eve, f"buy now {i}", T + i) for i in range(6)]  # one party floods
    person = [_for(db, actor.person("mcp"), f"person says {i}", T + 10 + i) for i in range(2)]
    bobs = [_for(db, bob, f"hello from bob {i}", T + 20 + i) for i in range(2)]
    peer = [note(db, C, f"peer note {i}", T + 30 + i, to=[B]) for i in range(2)]
    found = {e.dedupe_key: e for e in scan(db, T + 1000, cfg)}
    assert [found[f"note:{n.did}"].noise for n in eves] == ["", "", "", "flood", "flood", "flood"]
    assert all(found[f"note:{n.did}"].noise == "" for n in person + bobs + peer), found
    (flood,) = [e for e in found.values() if e.event_type == "note.flood"]
    assert flood.subject == "a2a:k-eve" and flood.dedupe_key.startswith("flood:a2a:k-eve:")


def test_a_repeat_is_per_actor_too(db):
    from meshnode.app import actor

    first = _for(db, actor.a2a("k-bob", "bob"), "the same words", T)
    other = _for(db, actor.person("web"), "the same words", T + 1)
    again = _for(db, actor.a2a("k-bob", "bob"), "The same  words", T + 2)
    found = {e.dedupe_key: e for e in scan(db, T + 1000)}
    assert [found[f"note:{n.did}"].noise for n in (first, other, again)] == ["", "", "repeat"]


def test_a_chat_message_is_left_to_the_tick_it_caused_for_the_grace(db):
    from meshnode.app import actor

    chat = _for(db, actor.person("web"), "what is on today?", T, topic="chat")
    plain = _for(db, actor.person("cli"), "a note, not a chat", T)
    keys = {e.dedupe_key for e in scan(db, T + 60_000, chat_grace_ms=120_000)}
    assert keys == {f"note:{plain.did}"}
    assert f"note:{chat.did}" in {e.dedupe_key for e in scan(db, T + 121_000, chat_grace_ms=120_000)}
    assert f"note:{chat.did}" in {e.dedupe_key for e in scan(db, T + 60_000)}  # no cycle: no grace
    db.conn.execute("UPDATE notes SET read = 1 WHERE container_did = ?", (chat.did,))  # the tick answered it
    assert f"note:{chat.did}" not in {e.dedupe_key for e in scan(db, T + 121_000, chat_grace_ms=120_000)}
