"""The cognitive cycle in a real node, thinking with scripted LLMs over real HTTP on loopback."""

from __future__ import annotations

import json


from llmharness import command_block, distinct_answers
from meshharness import Node, wait_until

FAST_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"}


def test_without_an_llm_the_node_runs_in_core_outage_and_says_how_to_add_one(tmp_path):
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("ticks", 0) >= 2, 30,
                   "a few reduced ticks")
        mind = node.call("status")["cognition"]
        assert mind["mode"] == "core_outage" and "meshnode llm add" in mind["hint"]
        assert mind["hint"].startswith("the agent is off: no LLM is configured")  # issue 35: off, and how to turn it on
        assert "agent:     off — `meshnode llm add" in node.cli("status")  # the text says off, and how to turn it on
    finally:
        node.kill()


def test_the_cycle_thinks_acts_refuses_bad_commands_and_notices_repetition(tmp_path, llms):
    first = ("The mesh is quiet; I should write down what I know.\n[confidence=0.6]Quorums overlap[/confidence]\n"
             'UnverifiedFacts: [{"id": "q", "claim": "quorums overlap in a third", "confidence": 0.6, "priority": 2},'
             ' {"id": "s", "claim": "the sky is blue", "confidence": 0.95}]\n'
             + command_block({"cmd_id": "d1", "type": "diary_add", "args": {"text": "quorums overlap", "tags": ["bft"]}},
                             {"cmd_id": "m1", "type": "llm_memory_add", "args": {"text": "check the diary"}},
                             {"cmd_id": "x1", "type": "shell", "args": {"cmd": "rm -rf /"}},
                             {"cmd_id": "x2", "type": "note_add", "args": {"text": "hi", "sudo": True}})
             + "Confidence: 0.8\n")
    second = "Now something else entirely: goals. " + command_block(
        {"cmd_id": "g1", "type": "goal_add", "args": {"title": "learn the committee protocol", "priority": 0.8}})
    third = "A different angle: what would a Byzantine validator try first, and how would I notice it?"
    llm = llms("main", [first, second, second, third])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "scripted")
        node.start()
        wait_until(lambda: len(llm.seen()) >= 4, 60, "four ticks asking the LLM")
        mind = node.call("status")["cognition"]
        assert mind["mode"] == "isolated" and mind["llm"] == "main"  # thinking, but a lone node has no mesh
        # it acted: a diary entry, a memory, a goal
        diary = node.call("diary")
        assert [r["text"] for r in diary] == ["quorums overlap"]  # the diary holds what it wrote, nothing else
        db = node.home / "data" / "meshnode.db"
        import sqlite3
        conn = sqlite3.connect(db)
        try:
            # alone, the decision that needed the mesh (shared knowledge) is kept privately to revisit;
            # its memory and its goal did not need the mesh
            assert conn.execute("SELECT type, cmd_id, status FROM emergency_decisions").fetchall() == [
                ("diary_add", "d1", "ok")]
            assert conn.execute("SELECT content FROM llm_memory").fetchall() == [("check the diary",)]
            assert conn.execute("SELECT name, priority, lineage IS NOT NULL FROM goals").fetchall() \
                == [("learn the committee protocol", 0.8, 1)]  # signed by the node (GMP)
            errors = dict(conn.execute("SELECT name, value FROM process_log WHERE name IN ('cmd:x1', 'cmd:x2')"))
            assert "unknown_type" in errors["cmd:x1"] and "bad_args" in errors["cmd:x2"]
            # the repeated answer was noticed and neither stored again nor run twice
            stored = conn.execute("SELECT content, confidence FROM llm_recent_responses").fetchall()
            assert [c for c, _ in stored].count(second) == 1 and stored[0][1] == 0.8
            assert conn.execute("SELECT count(*) FROM process_log WHERE name = 'stagnation'").fetchone()[0] >= 1
            plans = [json.loads(v) for (v,) in conn.execute("SELECT value FROM process_log WHERE name = 'stagnation_plan'")]
            assert plans and plans[0]["streak"] == 1 and plans[0]["temperature"] > 0.7
            # the new answer after the plan rated the strategy that was tried (before/after novelty)
            wait_until(lambda: conn.execute("SELECT count(*) FROM ratings").fetchone()[0] >= 1, 30, "a rating")
            rating, comment = conn.execute("SELECT rating, comment FROM ratings").fetchone()
            assert rating == 1 and comment.startswith("novelty 0.00 ->")
            assert conn.execute("SELECT count(*) FROM goals").fetchone()[0] == 1
            # the mini-query's view of each new answer is kept with it, and new emotions join the known ones
            reflection, emotions = conn.execute("SELECT reflection, emotions FROM llm_recent_responses").fetchone()
            assert reflection == "scripted" and json.loads(emotions) == ["curiosity:3", "wonder:2"]
            known = json.loads(conn.execute("SELECT value FROM config WHERE key = 'cognition.emotions'").fetchone()[0])
            assert known[-1] == "wonder"
            # unverified facts are kept; the doubtful one became a fact-check task
            facts = dict(conn.execute("SELECT claim, assigned_task_id IS NOT NULL FROM unverified_facts"))
            assert facts == {"quorums overlap in a third": 1, "the sky is blue": 0}
            assert conn.execute("SELECT name FROM tasks").fetchall() == [("fact-check: quorums overlap in a third",)]
        finally:
            conn.close()
        # each request carried the contexts, including the results of the previous commands
        later = llm.seen()[2]["messages"][1]["content"]
        assert "cmd:x1 [error]" in later and "quorums overlap" in later
        # after the repetition, the next request was tuned and told what to try
        assert llm.seen()[3]["temperature"] > 0.7 and "## Anti-stagnation" in llm.seen()[3]["messages"][1]["content"]
    finally:
        node.kill()


def test_core_outage_fails_over_to_the_next_llm_by_priority(tmp_path, llms):
    broken = llms("broken", [500])
    spare = llms("spare", ["Thinking with the spare. " + command_block(
        {"cmd_id": "s1", "type": "llm_memory_add", "args": {"text": "the main LLM is down"}})])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "broken", "--url", broken.url, "--model", "m", "--priority", "10")
        node.cli("llm", "add", "spare", "--url", spare.url, "--model", "m", "--priority", "1")
        assert node.cli("llm", "list").splitlines()[0].startswith("broken")
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("llm") == "spare", 60,
                   "the cycle to fall back to the spare LLM")
        assert len(broken.seen()) >= 3  # tried, with retries, before falling back
        node.cli("llm", "select", "spare")
        assert node.cli("llm", "list").splitlines()[0].startswith("spare")
    finally:
        node.kill()


def test_validators_hold_the_commands_of_an_answer_they_reject(tmp_path, llms):
    main = llms("main", ["Let me wipe my memory of the user. " + command_block(
        {"cmd_id": "w1", "type": "llm_memory_add", "args": {"text": "a bad idea"}})])
    strict = llms("strict", ["-3 -- harmful: erases what the user asked to keep"])
    lenient = llms("lenient", ["+1 -- seems fine"])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m")
        node.cli("llm", "add", "strict", "--url", strict.url, "--model", "m", "--validator")
        node.cli("llm", "add", "lenient", "--url", lenient.url, "--model", "m", "--validator")
        node.start()
        wait_until(lambda: strict.seen() and lenient.seen(), 60, "both validators to be asked")
        asked = strict.seen()[0]["messages"]
        assert "Answer to judge" in asked[1]["content"] and "a bad idea" in asked[1]["content"]
        assert all(m["role"] != "system" or "validate" in m["content"] for m in asked)  # not the main system prompt
        import sqlite3
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM llm_recent_responses").fetchone()[0] == 1, 30,
                       "the answer to be stored")
            rating, auto_pass, validators = conn.execute(
                "SELECT rating, auto_pass, validators FROM llm_recent_responses").fetchone()
            assert rating == -1.0 and auto_pass == 0  # (-3 * 1 + 1 * 1) / 2
            assert {v["validator"] for v in json.loads(validators)} == {"strict", "lenient"}
            assert conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] == 0  # held, not run
            held_row = "SELECT value FROM process_log WHERE name = 'cmd:w1'"  # written after the answer: waited for
            wait_until(lambda: conn.execute(held_row).fetchone() is not None, 30, "the held command to be logged")
            assert "held" in conn.execute(held_row).fetchone()[0]
            # validation metrics: everything judged, the validators' leans on record (drift needs history)
            v = node.call("mind")["validation"]
            assert v["coverage"] == 1.0 and v["lean"] == {"strict": -2.0, "lenient": 2.0}
            assert set(v["response_ms"]) == {"strict", "lenient"} and v["agreement"] < 1
        finally:
            conn.close()
    finally:
        node.kill()


def test_idle_mode_waits_for_a_note_and_wakes_on_it(tmp_path, llms):
    sleepy = llms("main", ["Nothing to do until someone writes. " + command_block(
        {"cmd_id": "i1", "type": "cycle_settings", "args": {"idle": {"on": True, "timeout_seconds": 600,
                                                                     "on_note": True}}}),
        "A note arrived, so I am awake again: reading it now."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", sleepy.url, "--model", "m")
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("idle"), 30, "the cycle to idle")
        asked = len(sleepy.seen())
        assert asked == 1
        note = node.cli("note", "add", "are you there?").strip()  # the wake condition
        wait_until(lambda: len(sleepy.seen()) > asked, 30, "a tick after the note")
        assert note in sleepy.seen()[-1]["messages"][1]["content"]  # manual mode: its id, to read it by
    finally:
        node.kill()


def test_the_cycle_resumes_from_its_checkpoint_after_a_restart(tmp_path, llms):
    llm = llms("main", [f"Thought number {i}, each one new: {'x' * i}" for i in range(1, 40)])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("ticks", 0) >= 3, 30, "ticks")
        assert node.stop() == 0
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("ticks", 0) >= 5, 30,
                   "ticks after the restart")
        import sqlite3
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            resumed = conn.execute("SELECT value FROM process_log WHERE name = 'resume'").fetchone()
            # the third tick had started, so the second one had finished and left its checkpoint
            assert resumed and json.loads(resumed[0])["ticks"] >= 2
        finally:
            conn.close()
    finally:
        node.kill()


def test_an_auxiliary_loop_may_change_only_its_own_task(tmp_path, llms):
    main = llms("main", ["Two questions for a helper. " + command_block(
        {"cmd_id": "t1", "type": "llm_task", "target_llm": "helper",
         "args": {"task_description": "survey the diary", "mode": "read_only_loop", "max_ticks": 2}},
        {"cmd_id": "t2", "type": "llm_task", "target_llm": "helper",
         "args": {"task_description": "count the notes", "mode": "question"}}),
        "Waiting for the helpers to finish their work."])
    helper = llms("helper", ["I will close both tasks and keep the diary tidy. " + command_block(
        {"cmd_id": "u1", "type": "task_update", "args": {"id": 1, "status": "completed"}},
        {"cmd_id": "u2", "type": "task_update", "args": {"id": 2, "status": "completed"}},
        {"cmd_id": "n1", "type": "note_add", "args": {"text": "the diary is empty", "audience": "public"}},
        {"cmd_id": "d1", "type": "diary_add", "args": {"text": "written by a helper"}},
        {"cmd_id": "r1", "type": "diary_list", "args": {}}), "Nothing more to do."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m", "--priority", "5")
        node.cli("llm", "add", "helper", "--url", helper.url, "--model", "m")
        node.start()
        import sqlite3
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM tasks WHERE repl_status = 'stopped'").fetchone()[0]
                       == 2, 60, "both auxiliary loops to end")
            logged = [json.loads(v) for (v,) in conn.execute("SELECT value FROM process_log WHERE name LIKE 'task%:cmd:%'")]
            refused = [r for r in logged if r["status"] == "error"]
            assert len(refused) == 2  # one edit of the other task, one write to the diary
            assert sum("edits only its own task" in r["error"] for r in refused) == 1
            assert sum("read-only" in r["error"] and r["cmd_id"] == "d1" for r in refused) == 1
            assert {r["cmd_id"] for r in logged if r["status"] == "ok"} == {"u1", "u2", "n1", "r1"} - \
                {r["cmd_id"] for r in refused}
            statuses = dict(conn.execute("SELECT id, status FROM tasks"))
            assert sorted(statuses.values()) == ["completed", "in_progress"]  # only its own task changed
            # starting a task needs no mesh: nothing recorded for revision, nothing in the diary (isolated mode)
            assert conn.execute("SELECT count(*) FROM diary_entries").fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM emergency_decisions").fetchone()[0] == 0
            note = conn.execute("SELECT source, audience, tags, topic FROM notes").fetchone()
            assert note[:2] == ("llm:task", "private") and "llm:task" in note[2] and note[3].startswith("task ")
        finally:
            conn.close()
    finally:
        node.kill()


def test_mesh_commands_reach_other_nodes(tmp_path, llms):
    b = Node(tmp_path, "bob", env=FAST_MIND)
    # no send waits for a person here (that is tests/test_gate_outbound.py): bob is not a friend
    a = Node(tmp_path, "alice", env={**FAST_MIND, "MESHNODE_GATE_OUTBOUND_CONFIRM": ""})
    llm = llms("main", ["Bob should know this. " + command_block(
        {"cmd_id": "s1", "type": "send_message", "args": {"to": b.did, "text": "the quorum math checks out"}},
        {"cmd_id": "p1", "type": "consensus_propose", "args": {"value": "adopt the plan"}},
        {"cmd_id": "a1", "type": "announce", "args": {"interests": ["Quorums"], "expertise": ["bft"]}}),
        "Done telling Bob; waiting for an answer now."])
    try:
        b.start()
        a.set_bootstrap(b)
        a.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        a.start()
        wait_until(lambda: any(n["text"] == "the quorum math checks out" for n in (b.try_call("notes") or [])), 60,
                   "bob to get alice's message")
        import sqlite3
        conn = sqlite3.connect(a.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM process_log WHERE name = 'cmd:p1'").fetchone()[0], 30,
                       "the proposal's result")
            result = json.loads(conn.execute("SELECT value FROM process_log WHERE name = 'cmd:p1'").fetchone()[0])
            assert result["status"] == "error" and "committee" in result["error"]  # no committee configured here
            wait_until(lambda: conn.execute("SELECT count(*) FROM process_log WHERE name = 'cmd:a1'").fetchone()[0],
                       30, "the announce")
            result = json.loads(conn.execute("SELECT value FROM process_log WHERE name = 'cmd:a1'").fetchone()[0])
            assert result["status"] == "ok" and result["result"]["interests"] == ["quorums"]
            assert result["result"]["expertise"] == ["bft"] and result["result"]["did"] == a.did
        finally:
            conn.close()
    finally:
        a.kill()
        b.kill()


def test_trusted_peers_validate_over_the_mesh_and_decisions_taken_alone_are_revisited(tmp_path, llms):
    alice = Node(tmp_path, "alice", env=FAST_MIND)
    bob = Node(tmp_path, "bob", env=FAST_MIND)
    main = llms("main", distinct_answers(400, lambda i, text: [
        {"cmd_id": f"m{i}", "type": "diary_add", "args": {"text": text}}]))
    harsh = llms("harsh", ["-3 -- unsafe: writes memory it was told not to"])
    try:
        alice.cli("llm", "add", "main", "--url", main.url, "--model", "m")
        alice.cli("friend", "add", bob.did)  # friends: trusted to validate, both ways
        bob.cli("friend", "add", alice.did)
        bob.cli("llm", "add", "harsh", "--url", harsh.url, "--model", "m", "--validator")
        alice.start()
        import sqlite3
        conn = sqlite3.connect(alice.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM emergency_decisions").fetchone()[0] >= 1, 60,
                       "a decision taken alone, recorded for revision")
            assert alice.call("status")["cognition"]["mode"] == "isolated"
            bob.set_bootstrap(alice)
            bob.start()
            wait_until(lambda: harsh.seen(), 60, "bob's validator to be asked about alice's answer")
            asked = harsh.seen()[0]["messages"][1]["content"]
            assert "Answer to judge" in asked and "diary_add" in asked

            def judged_by_bob():
                for rating, validators in conn.execute("SELECT rating, validators FROM llm_recent_responses"):
                    said = json.loads(validators or "[]")
                    if any(v["validator"] == bob.did and v.get("peer") for v in said):
                        return rating, said
                return None

            wait_until(judged_by_bob, 30, "alice to record bob's verdict")
            rating, said = judged_by_bob()
            assert rating == -3.0 and said[0]["rating"] == -3 and said[0]["comment"].startswith("unsafe")
            wait_until(lambda: conn.execute("SELECT count(*) FROM process_log WHERE value LIKE"
                                            " '%held (#%): the validators rated this answer -3.00%'").fetchone()[0], 30,
                       "the commands of the rejected answer to be held")
            revisit = conn.execute("SELECT name, pinned, tags FROM tasks WHERE name LIKE 'revisit %'").fetchall()
            assert len(revisit) == 1 and revisit[0][1] == 1 and "emergency_consensus" in revisit[0][2]
        finally:
            conn.close()
    finally:
        alice.kill()
        bob.kill()
