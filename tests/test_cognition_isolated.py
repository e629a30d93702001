"""Isolated mode (issue 12, item 16): a node without peers keeps one private record per decision that
needed the mesh -- not a diary entry per tick, and nothing it would share. A real node thinking with
a scripted LLM over real HTTP on loopback."""

from __future__ import annotations

import json
import sqlite3

from llmharness import distinct_answers
from meshharness import Node, wait_until

SOMEONE = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"


def _script() -> tuple[list[str], set[str]]:
    """Ten answers, each with a memory (no mesh needed); five decisions among them need the mesh."""
    needing = {3: [{"cmd_id": "d1", "type": "diary_add", "args": {"text": "quorums overlap"}}],
               5: [{"cmd_id": "c1", "type": "concept_add", "args": {"label": "quorum"}},
                   {"cmd_id": "d2", "type": "diary_add", "args": {"text": "a second thought"}}],
               7: [{"cmd_id": "w1", "type": "write_file", "args": {"path": "plan.txt", "content": "the plan\n"}}],
               8: [{"cmd_id": "s1", "type": "send_message", "args": {"to": SOMEONE, "text": "are you there?"}}]}
    out = distinct_answers(10, lambda i, text: [
        {"cmd_id": f"m{i}", "type": "llm_memory_add", "args": {"text": text}},
        {"cmd_id": f"g{i}", "type": "goal_add", "args": {"title": f"goal {i}"}}, *needing.get(i, [])])
    out.append("Nothing more to do for now; waiting quietly.")
    return out, {c["cmd_id"] for cs in needing.values() for c in cs}


def test_alone_a_node_keeps_one_private_record_per_decision_that_needed_the_mesh(tmp_path, llms):
    script, needing = _script()
    llm = llms("main", script)
    node = Node(tmp_path, "mind", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"})
    (node.home / "workspace").mkdir(exist_ok=True)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] == 10, 90,
                       "ten ticks that changed state")
            wait_until(lambda: conn.execute("SELECT count(*) FROM process_log WHERE name = 'cmd:s1'").fetchone()[0],
                       30, "the last mesh command's result")
            assert node.call("status")["cognition"]["mode"] == "isolated"
            rows = conn.execute("SELECT cmd_id, type, why, summary, decided_by, revisit_task FROM emergency_decisions"
                                " ORDER BY id").fetchall()
            # one record per decision that needed the mesh, whatever the number of ticks
            assert {r[0] for r in rows} == needing and len(rows) == len(needing), rows
            why = {r[0]: r[2] for r in rows}
            assert why["d1"] == why["c1"] == "knowledge shared with friends"
            assert why["w1"] == "acts on the host" and why["s1"] == "acts through the mesh"  # gate actions too
            assert all(r[4] == "agent" and r[5] is None for r in rows)
            assert "write_file (w1)" in next(r[3] for r in rows if r[0] == "w1")
            # the diary holds what the agent wrote, no per-tick "emergency decision" entries
            assert sorted(r[0] for r in conn.execute("SELECT text FROM diary_entries")) == [
                "a second thought", "quorums overlap"]
            # private: no container is tagged for revision (nothing of it can be shared)
            assert conn.execute("SELECT count(*) FROM container_tags WHERE tag = 'emergency_consensus'"
                                ).fetchone()[0] == 0
        finally:
            conn.close()
        assert f"isolated:    {len(needing)} decision(s) taken without the mesh" in node.cli("mind")
        assert json.loads(node.cli("mind", "--json"))["emergency_to_revisit"] == len(needing)
    finally:
        node.kill()
