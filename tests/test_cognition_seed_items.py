"""Seed 000 items in a real node, thinking with scripted LLMs over real HTTP on loopback: ethics
policies in context 1, fact-check verdicts, the error levels of the tick (timeout, error, crash),
knowledge and notes changed and withdrawn, the agent's requests about trust and its LLMs."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from llmharness import command_block
from meshharness import Node, wait_until

FAST_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"}


def _db(node: Node) -> sqlite3.Connection:
    return sqlite3.connect(node.home / "data" / "meshnode.db", timeout=30)


def _logged(conn, name: str) -> list[dict]:
    return [json.loads(v) for (v,) in conn.execute("SELECT value FROM process_log WHERE name = ?", (name,))]


def _section(prompt: str, title: str) -> str:
    part = prompt.split(f"## {title}", 1)[1]
    return part.split("\n## ", 1)[0]


def test_context_1_shows_the_persons_policies_and_the_agent_adds_only_its_own(tmp_path, llms):
    llm = llms("main", ["My norms first. " + command_block(
        {"cmd_id": "e1", "type": "ethics_add", "args": {"name": "sources", "principles": ["cite a source"]}},
        {"cmd_id": "e2", "type": "ethics_remove", "args": {"name": "privacy"}},
        {"cmd_id": "e3", "type": "ethics_list", "args": {}}), "Thinking under my norms."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("ethics", "add", "privacy", "never share the person's notes without asking")
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        wait_until(lambda: len(llm.seen()) >= 2, 60, "two ticks")
        first = llm.seen()[0]["messages"][1]["content"]
        assert "- never share the person's notes without asking" in _section(first, "Ethics policies (context 1)")
        # the agent's own policy joined the person's; the person's could not be removed by it
        later = _section(llm.seen()[1]["messages"][1]["content"], "Ethics policies (context 1)")
        assert "privacy, set by the person" in later and "sources, set by the agent:\n- cite a source" in later
        policies = {p["name"]: p["set_by"] for p in json.loads(node.cli("ethics", "list", "--json"))}
        assert policies == {"privacy": "person", "sources": "agent"}
        with closing(_db(node)) as conn:
            [refused] = _logged(conn, "cmd:e2")
            assert refused["status"] == "error" and "only the person removes it" in refused["error"]
        # a policy added with the CLI while the node runs is in the next tick's context 1
        node.cli("ethics", "add", "honesty", "say when you are unsure")
        seen = len(llm.seen())
        wait_until(lambda: len(llm.seen()) > seen + 1, 60, "another tick")
        assert "- say when you are unsure" in llm.seen()[-1]["messages"][1]["content"]
    finally:
        node.kill()


def test_a_fact_check_tasks_verdict_moves_its_fact_to_verified_or_rejected(tmp_path, llms):
    first = ("Two claims I am unsure of.\n"
             'UnverifiedFacts: [{"id": "a", "claim": "water boils at 100 C at sea level", "confidence": 0.5},'
             ' {"id": "b", "claim": "the moon is made of cheese", "confidence": 0.3},'
             ' {"id": "c", "claim": "two plus two is four", "confidence": 0.99},'
             ' {"id": "d", "claim": "bats are blind", "confidence": 0.4}]\n')
    second = "I checked both. " + command_block(
        {"cmd_id": "v1", "type": "task_update", "args": {"id": 1, "verdict": "verified", "evidence": "a handbook"}},
        {"cmd_id": "v2", "type": "task_update", "args": {"id": 2, "verdict": "rejected", "evidence": "seen it"}},
        {"cmd_id": "h1", "type": "llm_task", "target_llm": "helper",
         "args": {"task_id": 3, "task_description": "check this claim", "mode": "question"}},
        {"cmd_id": "v3", "type": "task_add", "args": {"title": "not a fact check"}},
        {"cmd_id": "v4", "type": "task_update", "args": {"id": 4, "verdict": "verified"}})
    llm = llms("main", [first, second, "Done with the facts."])
    helper = llms("helper", ["Bats see. " + command_block(
        {"cmd_id": "f1", "type": "task_update", "args": {"id": 3, "verdict": "rejected", "evidence": "they see"}})])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m", "--priority", "5")
        node.cli("llm", "add", "helper", "--url", helper.url, "--model", "m")
        node.start()
        with closing(_db(node)) as conn:
            wait_until(lambda: _logged(conn, "cmd:v4"), 60, "the verdicts to be given")
            # a helper given the fact-check task settles it with its own task's verdict
            wait_until(lambda: conn.execute("SELECT status FROM unverified_facts WHERE claim = 'bats are blind'"
                                            ).fetchone()[0] != "pending", 60, "the helper's verdict")
            facts = dict(conn.execute("SELECT claim, status FROM unverified_facts"))
            assert facts == {"water boils at 100 C at sea level": "verified", "the moon is made of cheese": "rejected",
                             "two plus two is four": "pending", "bats are blind": "rejected"}
            resolution = json.loads(conn.execute("SELECT resolution_json FROM unverified_facts WHERE status ="
                                                 " 'verified'").fetchone()[0])
            assert resolution == {"status": "verified", "evidence": "a handbook", "task_id": 1}
            assert dict(conn.execute("SELECT id, status FROM tasks")) == {1: "completed", 2: "completed", 3: "completed", 4: "pending"}
            [wrong] = _logged(conn, "cmd:v4")
            assert wrong["status"] == "error" and "checks no unverified fact" in wrong["error"]
    finally:
        node.kill()


def test_a_timeout_restarts_the_tick_and_an_executor_error_freezes_its_task(tmp_path, llms):
    plan = "A task for me and a question for a helper. " + command_block(
        {"cmd_id": "t1", "type": "task_add", "args": {"title": "survey the diary"}},
        {"cmd_id": "t2", "type": "llm_task", "target_llm": "helper",
         "args": {"task_description": "find the entry about bridges", "mode": "read_only_loop", "max_ticks": 3}})
    work = "Working on task 1. " + command_block(
        {"cmd_id": "r1", "type": "diary_read", "task_id": 1, "args": {"id": "did:hmp:container:uEiAnothing"}})
    main = llms("main", [{"delay": 12, "answer": "too late"}, plan, work, "Waiting for review."])
    helper = llms("helper", ["Reading it. " + command_block(
        {"cmd_id": "h1", "type": "diary_read", "args": {"id": "did:hmp:container:uEiAnobridge"}}),
        "Still looking."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m", "--priority", "5", "--timeout", "4")
        node.cli("llm", "add", "helper", "--url", helper.url, "--model", "m")
        node.start()
        with closing(_db(node)) as conn:
            wait_until(lambda: conn.execute("SELECT count(*) FROM tasks WHERE status = 'paused'").fetchone()[0] == 2,
                       90, "both tasks to be frozen")
            # timeout: logged at its level, and the same tick asked again at once, told why
            timeout = [json.loads(v) for v, s in conn.execute("SELECT value, status FROM process_log"
                                                              " WHERE name = 'cycle:timeout'") if s == "timeout"][0]
            assert timeout["tick"] == 1 and timeout["restart"] == 1 and "did not answer within 4 s" in timeout["error"]
            asked = [r["messages"][1]["content"] for r in main.seen()]
            ticks = [json.loads(_section(p, "System (context 7)"))["tick"] for p in asked[:2]]
            assert ticks == [1, 1], ticks
            assert "the tick was restarted" not in asked[0] and "the tick was restarted" in asked[1]
            # error: the command working for task 1 failed, so task 1 waits for review; the helper's
            # failed read froze its own task and stopped its loop
            tasks = {name: (status, repl) for name, status, repl in conn.execute(
                "SELECT name, status, repl_status FROM tasks")}
            assert tasks == {"survey the diary": ("paused", "stopped"),
                             "find the entry about bridges": ("paused", "error")}
            frozen = _logged(conn, "cmd:freeze:1")
            assert frozen and frozen[0]["cmd_id"] == "r1" and "no diary entry" in frozen[0]["error"]
            wait_until(lambda: len(helper.seen()) >= 1, 30, "the helper to be asked")
        assert len(helper.seen()) == 1  # a frozen task's loop asks no more
    finally:
        node.kill()


def test_a_crash_in_the_tick_is_told_to_the_person_once_and_the_cycle_goes_on(tmp_path, llms):
    llm = llms("main", ["A thought. " + command_block(
        {"cmd_id": "m1", "type": "llm_memory_add", "args": {"text": "still here"}}), "Another thought.",
        "A third, different thought."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        with closing(_db(node)) as conn:
            wait_until(lambda: conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] == 1, 60, "a tick")
            # a broken database under the running cycle: every tick now fails unexpectedly
            conn.execute("PRAGMA legacy_alter_table = ON")  # leave the views that name it alone
            conn.execute("ALTER TABLE llm_recent_responses RENAME TO llm_recent_responses_away")
            conn.commit()
            crashed = node.call("status")["cognition"]["ticks"]
            wait_until(lambda: node.call("status")["cognition"]["ticks"] >= crashed + 3, 60, "three more ticks")
            notes = conn.execute("SELECT source, audience, topic, text, read FROM notes").fetchall()
            assert len(notes) == 1, notes  # once, not once per tick
            source, audience, topic, text, read = notes[0]
            assert (source, audience, topic, read) == ("system", "private", "cognition crash", 1)  # not the agent's mail
            assert "OperationalError" in text and "llm_recent_responses" in text
            assert "OperationalError" in node.call("status")["cognition"]["last_error"]
            conn.execute("ALTER TABLE llm_recent_responses_away RENAME TO llm_recent_responses")
            conn.commit()
            stored = conn.execute("SELECT count(*) FROM llm_recent_responses").fetchone()[0]
            wait_until(lambda: conn.execute("SELECT count(*) FROM llm_recent_responses").fetchone()[0] > stored, 60,
                       "the cycle to think again")
        assert "crashed" in node.cli("note", "list")
    finally:
        node.kill()
