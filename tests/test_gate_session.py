"""A whole session through the gate, as a user runs it: a real node whose cognitive core (a
scripted LLM over real HTTP) perceives, plans, drafts and reflects; a person reviews, commits and
rolls back with the CLI. Also: processes started, finished and stopped through the gate."""

from __future__ import annotations

import json
import sqlite3

from llmharness import command_block
from meshharness import Node, wait_until

FAST_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"}


def _rows(node: Node, sql: str, params=()) -> list[tuple]:
    conn = sqlite3.connect(node.home / "data" / "meshnode.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def start_mind(tmp_path, llm, files: dict[str, str], env: dict[str, str] | None = None) -> Node:
    """A node thinking with ``llm``, its workspace holding ``files``; the caller kills it."""
    node = Node(tmp_path, "mind", env={**FAST_MIND, **(env or {})})
    node.cli("init", "--exist-ok")
    workspace = node.home / "workspace"
    workspace.mkdir(exist_ok=True)
    for name, text in files.items():
        (workspace / name).write_text(text)
    node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
    node.start()
    return node


def test_perceive_plan_draft_reflect_review_commit_rollback_through_the_cli(tmp_path, llms):
    script = [
        "Perceive: what is in my workspace? " + command_block(
            {"cmd_id": "p1", "type": "list_dir", "args": {}},
            {"cmd_id": "p2", "type": "read_file", "args": {"path": "notes.txt"}}),
        "Plan: notes.txt has a typo, 'teh'. I will fix it and count its words to check. " + command_block(
            {"cmd_id": "d1", "type": "patch_file", "args": {"path": "notes.txt", "search": "teh", "replace": "the"}},
            {"cmd_id": "c1", "type": "run_command", "args": {"program": "wc", "args": ["-w", "notes.txt"]}}),
        "The draft is ready; let me check my work before a person sees it. " + command_block(
            {"cmd_id": "s1", "type": "drafts_submit", "args": {"summary": "fixed the typo in notes.txt"}}),
        "READY -- the typo is fixed and nothing else changed",  # the reflection's answer
        "Waiting for the review now; nothing more to do in the workspace.",
    ]
    llm = llms("main", script)
    node = start_mind(tmp_path, llm, {"notes.txt": "teh quick brown fox\n"})
    workspace = node.home / "workspace"
    try:
        assert "destructive  delete_file" in node.cli("gate", "tools")
        wait_until(lambda: json.loads(node.cli("drafts", "list", "--json"))["submission"], 60,
                   "the agent to submit its drafts")
        listing = json.loads(node.cli("drafts", "list", "--json"))
        assert listing["submission"]["ready"] == 1 and listing["submission"]["summary"] == "fixed the typo in notes.txt"
        assert [d["path"] for d in listing["drafts"]] == ["notes.txt"]
        shown = node.cli("drafts", "list", "--diff")
        assert "-teh quick brown fox" in shown and "+the quick brown fox" in shown and "ready" in shown
        # perceive: it read the file; its command ran on the drafted text in a scratch copy
        results = {name: json.loads(value) for name, value in _rows(node, "SELECT name, value FROM process_log"
                                                                    " WHERE name LIKE 'cmd:%'")}
        assert results["cmd:p2"]["result"]["text"] == "teh quick brown fox\n"
        assert results["cmd:c1"]["result"]["stdout"].split() == ["4", "notes.txt"]
        reflection = [r for r in llm.seen() if "REFLECTION BEFORE REVIEW" in r["messages"][-1]["content"]]
        assert len(reflection) == 1 and "+the quick brown fox" in reflection[0]["messages"][-1]["content"]
        assert any("wait for your review" in n["text"] for n in node.call("notes"))  # the user was told
        assert (workspace / "notes.txt").read_text() == "teh quick brown fox\n"  # nothing real changed yet

        node.cli("drafts", "accept", "--all")
        committed = node.cli("drafts", "commit", "-m", "typo fix reviewed")
        snapshot = int(committed.split("snapshot ")[1].split()[0])
        assert (workspace / "notes.txt").read_text() == "the quick brown fox\n"
        assert "typo fix reviewed" in node.cli("snapshots", "list")
        state = json.loads(node.cli("snapshots", "show", str(snapshot), "--json"))["state"]
        assert state["drafts"][0]["path"] == "notes.txt" and state["messages"]  # where its thinking stood
        # the agent hears what the person decided, at its next tick
        wait_until(lambda: "gate:commit" in llm.seen()[-1]["messages"][-1]["content"], 30,
                   "the commit to reach the agent's context")
        node.cli("snapshots", "rollback", str(snapshot))
        assert (workspace / "notes.txt").read_text() == "teh quick brown fox\n"
    finally:
        node.kill()


def test_processes_start_finish_and_stop_through_the_gate_and_destructive_calls_wait(tmp_path, llms):
    script = [
        "Two jobs: a quick count and a long wait. " + command_block(
            {"cmd_id": "a", "type": "process_start", "args": {"program": "python3", "args": [
                "-c", "import pathlib; pathlib.Path('out.txt').write_text('computed'); print('done')"]}},
            {"cmd_id": "b", "type": "process_start", "args": {"program": "sleep", "args": ["600"]}},
            {"cmd_id": "x", "type": "process_start", "args": {"program": "sh", "args": ["-c", "id"]}}),
        "Stop the long one, and clean up an old file. " + command_block(
            {"cmd_id": "s", "type": "process_stop", "args": {"id": 2}},
            {"cmd_id": "r", "type": "delete_file", "args": {"path": "old.txt"}}),
        "Nothing else to do for now; I will wait.",
    ]
    llm = llms("main", script)
    node = start_mind(tmp_path, llm, {"old.txt": "old\n"})
    try:
        wait_until(lambda: len(_rows(node, "SELECT id FROM processes WHERE status != 'running'")) == 2, 60,
                   "both processes to end")
        status = dict(_rows(node, "SELECT id, status FROM processes"))
        assert status == {1: "exited", 2: "stopped"}
        refused = json.loads(_rows(node, "SELECT value FROM process_log WHERE name = 'cmd:x'")[0][0])
        assert refused["status"] == "error" and "not an allowed program" in refused["error"]
        done = json.loads(_rows(node, "SELECT value FROM process_log WHERE name = 'process:1'")[0][0])
        assert done["stdout"] == "done\n" and done["drafted"] == ["out.txt"]
        assert not (node.home / "workspace" / "out.txt").exists()  # a draft, for review
        # the destructive call waits for a person; the agent went on meanwhile
        pending = json.loads(node.cli("confirm", "list", "--json"))
        assert [(p["tool"], p["args"]) for p in pending] == [("delete_file", {"path": "old.txt"})]
        node.cli("confirm", "approve", str(pending[0]["id"]))
        wait_until(lambda: json.loads(node.cli("confirm", "list", "--all", "--json"))[0]["status"] == "done", 30,
                   "the approved call to run at a later tick")
        drafted = {d["path"]: d["deleted"] for d in json.loads(node.cli("drafts", "list", "--json"))["drafts"]}
        assert drafted == {"out.txt": False, "old.txt": True}
        assert (node.home / "workspace" / "old.txt").exists()  # still a draft, until reviewed
    finally:
        node.kill()


def test_a_tool_loop_is_stopped_and_feeds_the_anti_stagnation_reflex(tmp_path, llms):
    import random

    words = "lantern ferry orchard cobalt meadow signal harbor thistle basalt ember willow canyon prism".split()
    script = []
    for i in range(8):  # different words each time, the same call each time
        text = " ".join(random.Random(i).sample(words, 10))
        script.append(f"{text}. " + command_block({"cmd_id": f"r{i}", "type": "read_file",
                                                   "args": {"path": "notes.txt"}}))
    llm = llms("main", script)
    node = start_mind(tmp_path, llm, {"notes.txt": "the same file\n"})
    try:
        wait_until(lambda: _rows(node, "SELECT value FROM process_log WHERE name = 'cmd:r3'"), 60, "a fourth read")
        fourth = json.loads(_rows(node, "SELECT value FROM process_log WHERE name = 'cmd:r3'")[0][0])
        assert fourth["status"] == "error" and fourth["code"] == "loop" and "another approach" in fourth["error"]
        wait_until(lambda: _rows(node, "SELECT value FROM process_log WHERE name = 'stagnation_plan'"), 30,
                   "the reflex to plan against the loop")
        plan = _rows(node, "SELECT min(id) FROM process_log WHERE name = 'stagnation_plan'")[0][0]
        refused = _rows(node, "SELECT id FROM process_log WHERE name = 'cmd:r3'")[0][0]
        repeats = _rows(node, "SELECT count(*) FROM process_log WHERE name = 'stagnation' AND id < ?", (plan,))[0][0]
        assert plan > refused and repeats == 0  # planned because of the loop, not a repeated answer
        assert all(json.loads(v)["status"] == "ok" for (v,) in _rows(
            node, "SELECT value FROM process_log WHERE name IN ('cmd:r0', 'cmd:r1', 'cmd:r2')"))
    finally:
        node.kill()
