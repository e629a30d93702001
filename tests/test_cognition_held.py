"""Held commands (issue 12, item 11): when no validator gives a verdict, the answer's commands wait
for a person, who sees them in `status` and `meshnode mind held` and releases or drops them -- with
the node running (through its control socket) or stopped (the node runs them when it starts).
Real nodes thinking with scripted LLMs over real HTTP on loopback."""

from __future__ import annotations

import json
import sqlite3

from llmharness import command_block
from meshharness import Node, wait_until

# the validator never gets set aside here: every answer's commands are held
MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2", "MESHNODE_COGNITION_VALIDATOR_FAILURES": "1000"}


def _memory(node: Node) -> list[str]:
    conn = sqlite3.connect(node.home / "data" / "meshnode.db")
    try:
        return sorted(r[0] for r in conn.execute("SELECT content FROM llm_memory"))
    finally:
        conn.close()


def _held(node: Node) -> dict:
    return (node.try_call("status") or {}).get("cognition", {}).get("held") or {}


def test_commands_held_for_want_of_a_verdict_are_shown_and_a_person_releases_or_drops_them(tmp_path, llms):
    main = llms("main", [
        "First I will remember the committee size. " + command_block(
            {"cmd_id": "a1", "type": "llm_memory_add", "args": {"text": "keep A"}}),
        "Second, a wholly different matter about quorum intersections. " + command_block(
            {"cmd_id": "b1", "type": "llm_memory_add", "args": {"text": "keep B"}}),
        "Third, lantern orchard basalt: the ferry schedule must be noted. " + command_block(
            {"cmd_id": "c1", "type": "llm_memory_add", "args": {"text": "keep C"}}),
        "Nothing more to add; I am waiting for someone to write."])
    down = llms("down", [503])  # the only validator: unreachable, every time
    node = Node(tmp_path, "mind", env=MIND)
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m")
        node.cli("llm", "add", "down", "--url", down.url, "--model", "m", "--validator")
        node.start()
        wait_until(lambda: _held(node).get("count") == 3, 60, "the three answers' commands to be held")
        held = _held(node)
        assert held["by_kind"] == {"no_verdict": 3}
        assert "no validator gave a verdict" in held["reason"] and "down: unreachable" in held["reason"]
        assert node.call("status")["cognition"]["stalled"] is True
        counted = {(m["name"], tuple(m["labels"].values())): m["value"] for m in node.call("metrics")}
        assert counted[("answers_held", ("no_verdict",))] >= 3
        assert counted[("validator_no_verdict", ("unreachable",))] >= 3
        text = node.cli("status")
        assert "held:      3 command(s)" in text and "meshnode mind held" in text  # visible, with what to do
        listing = json.loads(node.cli("mind", "held", "--json"))
        ids = {r["cmd_id"]: r["id"] for r in listing}
        assert set(ids) == {"a1", "b1", "c1"} and all(r["kind"] == "no_verdict" for r in listing)
        shown = node.cli("mind", "held")
        assert f"{ids['a1']:5}  held" in shown and "llm_memory_add (a1)" in shown and "down: unreachable" in shown
        assert _memory(node) == []  # held: nothing ran

        # release one: the running node runs it at once and says how it went
        out = node.cli("mind", "release", str(ids["a1"]))
        assert f"released 1: #{ids['a1']} llm_memory_add" in out and "(a1): ok" in out
        assert _memory(node) == ["keep A"]
        # drop another: it never runs
        assert f"dropped 1: #{ids['b1']}" in node.cli("mind", "drop", str(ids["b1"]))
        statuses = {r["cmd_id"]: r["status"] for r in json.loads(node.cli("mind", "held", "--all", "--json"))}
        assert statuses == {"a1": "done", "b1": "dropped", "c1": "held"}
        assert _held(node)["count"] == 1

        # the stopped node: the CLI releases on the database, the node runs it when it starts
        assert node.stop() == 0
        log = "\n".join(node.drain())
        assert log.count("commands are held: no validator gave a verdict") == 1  # a warning, once
        out = node.cli("mind", "release", "--all")
        assert f"released 1: #{ids['c1']}" in out and "the node runs them when it starts" in out
        node.start()
        wait_until(lambda: _memory(node) == ["keep A", "keep C"], 60, "the released command to run at start")
        assert _held(node)["count"] == 0
        assert "keep B" not in _memory(node)
        node.stop()

        # bad input gets one line, not a traceback
        for args in (["mind", "release"], ["mind", "drop", "999"], ["mind", "release", str(ids["b1"])]):
            r = node.run_cli(*args)
            assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    finally:
        node.kill()
