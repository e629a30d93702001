"""A quiet node without an LLM (issue 35, 3): a signal for an agent that cannot think is one plain
line in the person's inbox, never a wake that fails and an escalation minutes later; with an LLM
the agent is woken as before. The core over ``AgentsOff``, then the whole scan over a real store."""

from __future__ import annotations

from types import SimpleNamespace

import trio

from meshnode.engines.reactor.core import Reactor
from meshnode.engines.reactor.types import AgentsOff, Event, RunEnded, Severity, TraceKind
from tests.reactor_strategies import SELF, T0, registry, small_config
from test_reactor_scenarios import FakeCycle, _service

OFF = AgentsOff(frozenset({SELF}))
ON = AgentsOff(frozenset())


def ev(key, etype="note.direct", agent=SELF, **refs):
    return Event(etype, "s", agent, Severity.P2, key, "agent", (TraceKind.MESSAGE,), T0, "notes",
                 "peer \"alice\": hello", refs)


def actions(step, key):
    return [d.action for d in step.decisions if d.dedupe_key == key]


def test_no_llm_a_signal_is_one_line_for_the_person_and_nothing_wakes_fails_or_escalates():
    r = Reactor(small_config(), registry())
    s = r.step(T0, [OFF, ev("note:1", by="peer"), ev("note:2", "note.question", by="a2a")])
    assert [e.dedupe_key for e in s.for_person] == ["note:1", "note:2"]
    assert actions(s, "note:1") == ["to_person"] and s.changed.event_status["note:1"] == ("done", None)
    assert s.jobs == [] and s.escalations == [] and r.open_jobs() == []
    later = [r.step(T0 + n * 60_000, [OFF]) for n in range(1, 10)]  # past every grace, answer and repeat time
    assert all(x.jobs == x.escalations == x.checks == x.for_person == [] for x in later)


def test_no_llm_the_person_s_own_notes_and_agent_only_reminders_are_no_line():
    r = Reactor(small_config(), registry())
    s = r.step(T0, [OFF, ev("note:mine", by="person"), ev("unanswered:x", "thread.unanswered", by="peer")])
    assert s.for_person == [] and s.jobs == []
    assert actions(s, "note:mine") == actions(s, "unanswered:x") == ["agent_off"]


def test_with_an_llm_the_agent_is_woken_as_before():
    r = Reactor(small_config(), registry())
    s = r.step(T0, [ON, ev("note:1", by="peer")])
    assert s.for_person == [] and [j.agent for j in s.jobs] == [SELF] and actions(s, "note:1") == ["woken"]


def test_an_llm_added_later_wakes_the_next_signal_and_does_not_replay_what_the_person_was_told():
    r = Reactor(small_config(), registry())
    r.step(T0, [OFF, ev("note:1", by="peer")])
    s = r.step(T0 + 1000, [ON, ev("note:2", by="peer")])
    assert s.for_person == [] and [j.events for j in s.jobs] == [("note:2",)]


def test_what_waited_for_a_wake_when_the_llm_went_away_goes_to_the_person():
    r = Reactor(small_config(), registry())
    first = r.step(T0, [ON, ev("note:1", by="peer")]).jobs[0]
    held = r.step(T0 + 1, [ON, ev("note:2", by="peer")])  # the wake cooldown holds it
    assert actions(held, "note:2") == ["held_cooldown"]
    s = r.step(T0 + 2, [OFF])
    assert [e.dedupe_key for e in s.for_person] == ["note:2"] and actions(s, "note:2") == ["to_person"]
    # the wake already made runs its course (a run that fails is the failure it always was)
    r.step(T0 + 3, [OFF, RunEnded(first.job_id, T0 + 3, "ok")])
    assert r.queues.of(SELF, 10) == []


def test_other_agents_are_not_off_with_the_core():
    r = Reactor(small_config(), registry())
    s = r.step(T0, [OFF, ev("note:scout", agent="scout", by="peer")])
    assert s.for_person == [] and [j.agent for j in s.jobs] == ["scout"]


# ---- the whole scan: a friend's @bob note on a node without an LLM --------------------------------

def _peer_note(store, author, text: str, at: int):
    from meshnode.domain.notes import make_note

    note = make_note(author, text, now_ms=at, audience="public")
    return store.write(lambda db: db.put_container(note, received_at_ms=at, local={"tags": []}))


def _named_peer(db, did: str, name: str, at: int) -> None:
    from meshnode.base.identity.did import did_to_peer_id
    from meshnode.store.peers import upsert_peer

    upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=at, source="exchange", name=name)


def _count(table: str):
    return lambda db: db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_friend_s_mention_on_a_node_without_an_llm_is_one_inbox_line_and_with_one_a_wake(tmp_path):
    from meshnode.app.actor import person
    from meshnode.app.context import App
    from meshnode.app.dispatch import dispatch
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey
    from meshnode.base.metrics import Metrics
    from meshnode.records.mind import registry as llms

    key, alice = NodeKey.generate(), NodeKey.generate()
    (tmp_path / "reactor").mkdir()
    (tmp_path / "reactor" / "aliases.toml").write_text('[agents.self]\naliases = ["bob"]\n')
    clock = [now_ms()]
    web = person("web")

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 1}, cycle, clock=lambda: clock[0],
                                        llm=False)
        app = App(store, key, mesh=SimpleNamespace(), cycle=cycle, metrics=Metrics(), clock=lambda: clock[0])
        try:
            await store.write(_named_peer, alice.did, "alice", clock[0])
            await _peer_note(store, alice, "@bob the pump in the cellar leaks\nit started this morning", clock[0])
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                first = await service.scan()
                for _ in range(5):  # 2.5 minutes and more: the wake that failed used to escalate by now
                    clock[0] += 60_000
                    await service.scan()
            assert first["jobs"] == [] and cycle.wakes.runs == []
            assert [d["action"] for d in first["decisions"]] == ["to_person"]
            assert await store.read(_count("reactor_escalations")) == 0
            assert await store.read(_count("reactor_jobs")) == 0
            listed = await dispatch(app, web, "inbox", {})
            [item] = listed["items"]
            assert item["kind"] == "notice" and item["summary"] == '"alice" mentioned you: @bob the pump in the cellar leaks'
            assert "it started this morning" in item["detail"] and listed["count"]["by_kind"]["notice"] == 1
            done = await dispatch(app, web, "inbox_decide", {"kind": "notice", "ref": str(item["ref"]),
                                                               "decision": "dismiss"})
            assert done["count"]["total"] == 0

            await store.write(llms.add, llms.Endpoint("main", "http://127.0.0.1:9/v1", "test-model"))
            clock[0] += 60_000
            await _peer_note(store, alice, "@bob and the boiler too?", clock[0])
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                woken = await service.scan()
            assert [j["agent"] for j in woken["jobs"]] == [key.did] and len(cycle.wakes.runs) == 1
            assert "boiler" in cycle.wakes.runs[0][1] and "pump" not in cycle.wakes.runs[0][1]
            assert (await dispatch(app, web, "inbox", {}))["items"] == []
        finally:
            await store.aclose()

    trio.run(main)
