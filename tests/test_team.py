"""The team scenario of issue 37 (bench/team.py), its small variant: a person asks node A's agent
in words; A's agent (a scripted LLM reading its prompt) makes the goal, splits it into three tasks
and offers them by interest; B's and C's agents accept, work through the gate, the diary and a
note, and finish; A's agent reviews every result and closes the goal, telling the person."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "team.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_team", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_goal_given_in_words_is_split_delegated_worked_reviewed_and_closed(tmp_path):
    team = load_bench()
    out = team.run("plain", tmp_path, True, print)
    assert out.get("completed"), out
    assert out["tasks_done"] == 3 and out["reassignments"] == 0
    assert out["reviews"] == {"accepted": 3, "rejected": 0}  # every result reviewed by A's agent
    holders = {h for held in out["who"].values() for h, _ in held}
    assert holders <= {"bob", "carol"} and all(ended == "completed" for held in out["who"].values()
                                               for _, ended in held), out["who"]
    for name in holders:  # each worker that held a task left its work: a draft, a diary entry, a note
        assert out["work"][name]["drafts"] >= 1 and out["work"][name]["diary"] >= 1 \
            and out["work"][name]["notes"] >= 1, out["work"]
    said = out["person_told"]  # the conversation the person started: the agent's answers in it
    assert said[0].startswith("I made the goal") and said[-1].startswith("Done:"), said
    assert sorted(line.split("'")[1] for line in said if line.startswith("Result of")) == sorted(team.TASKS)
    assert "Team report" in out["tree"] and "3 done" in out["tree"]
    assert out["messages_per_task"] > 0 and out["bytes_per_task"] > 0  # the nodes' wire_* metrics
