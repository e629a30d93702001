"""Pages made for reading (issue 34): the reactor's timeline in words (records.reactor.timeline), who
wrote a row and when (faces.web.reading), goal and task descriptions in the agent's prompt (bounded),
and a task given to the agent waking its cycle (app.actions.gmp). The pages themselves are in
tests/web/test_browser_reading.py."""

from __future__ import annotations

import json

import pytest
import trio

from meshnode.app import actor
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.identity.keys import NodeKey
from meshnode.engines.cognition import contexts
from meshnode.faces.web import reading
from meshnode.records.reactor import timeline
from meshnode.store import Database
from meshnode.store.service import Store

KEY = NodeKey(bytes([9]) * 32)
PEER = "did:key:z6MkpeerPEERpeerPEERpeerPEERpeerPEERpeerPEER1234"
T = 1_800_000_000_000


# --- who wrote it, when, in Markdown ---------------------------------------------------------------


def test_a_row_says_who_wrote_it_in_words_and_never_the_nodes_name():
    own = KEY.did
    assert reading.author("person", "web", None, None, own, "mynode", own) == ("person", "the person (web)")
    assert reading.author("agent", "cycle", None, None, own, "mynode", own) == ("agent", "the agent")
    kind, words = reading.author("a2a", None, "bob", "known:bob", own, "mynode", own)
    assert kind == "a2a" and "bob" in words and "A2A" in words
    assert reading.author("peer", None, None, None, PEER, "alice", own) == ("peer", "peer alice")
    assert reading.author(None, None, None, None, own, "mynode", own) == ("node", "this node")  # not "mynode"


def test_times_as_milliseconds_and_markdown_as_sanitized_html():
    assert reading.at_ms("2026-12-07T10:11:48.175Z") == 1796638308175
    assert reading.at_ms(1796638308175) == 1796638308175
    assert reading.at_ms("yesterday") is None and reading.at_ms(None) is None
    row = reading.note({"text": "**bold** <script>x</script>", "timestamp": "2026-12-07T10:11:48.175Z",
                        "asked_kind": "person", "asked_via": "cli", "author_did": KEY.did}, KEY.did)
    assert row["author"] == "the person (cli)" and row["at_ms"] == 1796638308175
    assert "<strong>bold</strong>" in row["html"] and "<script>" not in row["html"]


# --- the reactor's timeline ------------------------------------------------------------------------


def _event(conn, key, agent, status, seen, job=None, summary="the person (cli): the fuses?"):
    conn.execute("INSERT INTO reactor_events (dedupe_key, event_type, subject, agent, severity, route, required_trace,"
                 " source, summary, at_ms, seen_ms, last_seen_ms, status, job_id) VALUES (?, 'note.direct', ?, ?, 2,"
                 " 'agent', '[]', 'notes', ?, ?, ?, ?, ?, ?)", (key, key, agent, summary, seen, seen, seen, status, job))


def test_the_timeline_tells_what_woke_whom_why_what_it_did_and_what_was_escalated(tmp_path):
    own = KEY.did
    db = Database(tmp_path / "t.db")
    try:
        with db.transaction() as conn:
            conn.execute("INSERT INTO agent_peers (id, name) VALUES (?, 'alice')", (PEER,))
            _event(conn, "note:a", own, "job", T, job="wake-1")
            _event(conn, "note:b", own, "held", T + 5_000, summary=f"peer alice ({PEER}): hello")
            _event(conn, "note:c", own, "noise", T + 6_000)
            conn.execute("INSERT INTO reactor_decisions (at_ms, dedupe_key, action, rule, why) VALUES (?, 'note:b',"
                         " 'held', 'direct_note', ?)", (T + 5_000, f"{own} is in a cooldown"))
            conn.execute("INSERT INTO reactor_jobs (job_id, agent, priority, reason, status, created_ms, ended_ms, exit,"
                         " max_runtime_s, required_trace, events, dedupe_key, report, job) VALUES ('wake-1', ?, 2,"
                         " '[\"direct_note\"]', 'ok', ?, ?, 'ok', 600, '[]', '[\"note:a\"]', 'wake:1', ?, '{}')",
                         (own, T + 1_000, T + 3_000, json.dumps({"processed_messages": [1], "outgoing_messages": [7]})))
            conn.execute("INSERT INTO reactor_escalations (key, agent, to_id, level, event_key, text, job_id, sent_ms)"
                         " VALUES ('esc-1', ?, ?, 1, 'note:a', ?, 'wake-1', ?)", (own, PEER, f"{own} did not answer",
                                                                                     T + 4_000))
            for tick, commands in ((41, 2), (42, 0)):
                conn.execute("INSERT INTO tick_traces (tick, started_ms, mode, wake_job, messages_json, summary_json)"
                             " VALUES (?, ?, 'auto', 'wake-1', '[]', ?)", (tick, T + 2_000, json.dumps({"commands": commands})))
        items = timeline.wakes(db, own, limit=10)
        assert [i["kind"] for i in items] == ["signal", "wake"]  # newest first; the noise is left out
        signal, wake = items
        assert signal["sentence"] == "A signal for the agent did not wake it: held for later (a cooldown or the" \
                                     " hourly budget) (the agent is in a cooldown)."
        assert PEER not in json.dumps({k: v for k, v in signal.items() if k != "agent"})  # names, not DIDs
        assert "peer alice (alice): hello" == signal["text"]
        assert wake["sentence"] == "The reactor woke the agent for a note addressed to it."
        assert wake["who"] == "the agent" and wake["signals"][0]["what"] == "a note to it"
        assert wake["did"] == "done; it thought 2 ticks (#41–#42) and gave 2 commands; its report: 1 message read," \
                              " 1 message sent"
        assert wake["escalations"] == [{"to": "alice", "to_id": PEER, "level": 1, "text": "the agent did not answer",
                                        "at_ms": T + 4_000, "sent": False}]
        assert timeline.wakes(db, own, limit=10, before_ms=T + 5_000) == [wake]  # the page before
        assert len(timeline.wakes(db, own, limit=1)) == 1
    finally:
        db.close()


# --- goals in the prompt, and a task for the agent waking it ------------------------------------


async def test_goal_and_task_descriptions_reach_the_prompt_bounded(tmp_path):
    async with await Store.open(tmp_path / "g.db") as store:
        app = App(store, KEY, clock=lambda: T)
        long = "why: " + "tomatoes need water " * 100
        goal = await dispatch(app, actor.person("web"), "goal_add", {"title": "grow tomatoes", "description": long})
        task = await dispatch(app, actor.person("web"), "task_add", {"goal": goal["lineage"], "title": "water them",
                                                                       "description": "each *morning*"})
        await dispatch(app, actor.person("web"), "task_assign", {"task": task["lineage"], "candidates": [KEY.did]})
        seen = await store.read(lambda db: contexts.goals_and_tasks(db, KEY.did, T + 1))
    (g,) = seen["goals"]
    assert g["description"].startswith("why: tomatoes need water") and len(g["description"]) == contexts.MAX_DESCRIPTION
    assert g["description"].endswith("…")
    assert seen["tasks"][0]["description"] == "each *morning*"


class _Cycle:
    def __init__(self, paused=False):
        self.paused, self.wake = paused, trio.Event()


@pytest.mark.parametrize("who, paused, wakes", [(actor.person("web"), False, True), (actor.AGENT, False, False),
                                                (actor.person("cli"), True, False)])
async def test_a_task_given_to_the_agent_wakes_its_cycle(tmp_path, who, paused, wakes):
    async with await Store.open(tmp_path / "w.db") as store:
        cycle = _Cycle(paused)
        app = App(store, KEY, clock=lambda: T, cycle=cycle)
        goal = await dispatch(app, actor.person("web"), "goal_add", {"title": "g"})
        task = await dispatch(app, actor.person("web"), "task_add", {"goal": goal["lineage"], "title": "t"})
        assert not cycle.wake.is_set()  # a task nobody holds wakes nobody
        await dispatch(app, who, "task_assign", {"task": task["lineage"], "candidates": [KEY.did]})
        assert cycle.wake.is_set() is wakes


async def test_a_task_offered_to_a_peer_does_not_wake_the_agent(tmp_path):
    async with await Store.open(tmp_path / "p.db") as store:
        cycle = _Cycle()
        app = App(store, KEY, clock=lambda: T, cycle=cycle)
        goal = await dispatch(app, actor.person("web"), "goal_add", {"title": "g"})
        task = await dispatch(app, actor.person("web"), "task_add", {"goal": goal["lineage"], "title": "t"})
        await dispatch(app, actor.person("web"), "task_assign", {"task": task["lineage"], "candidates": [PEER]})
        assert not cycle.wake.is_set()


def test_dids_in_a_reason_become_names():
    assert timeline.named(f"to {PEER} and {KEY.did}", {KEY.did: "the agent"}) == f"to …{PEER[-8:]} and the agent"


def test_a_task_given_to_the_agent_on_the_web_reaches_its_prompt_before_the_pause_ends(tmp_path):
    """The cycle pauses 600 s between ticks and the reactor is off: only the action's wake can bring
    the task (and its description) into a prompt within the wait below."""
    from meshharness import wait_until
    from webharness import agent_node

    env = {"MESHNODE_COGNITION_PAUSE_SECONDS": "600", "MESHNODE_REACTOR_ENABLED": "false"}
    with agent_node(tmp_path, env=env) as web:
        first = wait_until(lambda: web.get("/api/mind/ticks"), 60, "the first tick")[0]["tick"]
        me = web.get("/api/status")["did"]
        goal = web.post("/api/goals", {"title": "Grow tomatoes", "description": "six plants on the **balcony**"})
        task = web.post("/api/tasks", {"goal": goal["lineage"], "title": "Water them", "description": "at dawn"})
        web.post(f"/api/tasks/{task['lineage']}/assign", {"candidates": [me]})

        def prompted():
            for t in web.get("/api/mind/ticks"):
                if t["tick"] > first:
                    shown = web.get(f"/api/mind/ticks/{t['tick']}")
                    text = " ".join(c["text"] for c in shown.get("contexts") or [])
                    if "Water them" in text:
                        return text
            return None

        text = wait_until(prompted, 60, "a tick whose prompt has the task")
        assert "at dawn" in text and "six plants on the **balcony**" in text
