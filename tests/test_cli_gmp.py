"""``meshnode goal ...`` and ``meshnode task ...`` as a person runs them (the CLI in-process on a
temporary home, no node running): ids printed and typed back (short ids too), listings and
the tree, ``--json`` that parses, bad input as one readable line, closed pipes and peer text
that cannot reach the terminal as escape codes."""

from __future__ import annotations

import json

from cli_runner import run_into_closed_pipe
from test_cli import assert_clean_failure, one_error_line


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def short(did: str) -> str:
    return did.removeprefix("did:hmp:container:uEi")[:10]


def test_a_goal_and_its_tasks_from_the_command_line(run_cli, home):
    goal = ok(run_cli("--home", home, "goal", "add", "Ship the bridge", "--priority", "0.8",
                      "--criterion", "it carries trucks", "--tag", "bridge")).strip()
    assert goal.startswith("did:hmp:container:")
    spec = ok(run_cli("--home", home, "task", "add", short(goal), "write spec", "--deadline", "2030-01-02")).strip()
    adapter = ok(run_cli("--home", home, "task", "add", goal, "build adapter", "--check-every", "1d",
                         "--grace", "2h", "--tag", "rust")).strip()
    ok(run_cli("--home", home, "task", "add", goal, "fixtures", "--parent", short(adapter)))
    me = json.loads(ok(run_cli("--home", home, "status", "--json")))["did"]
    assert "assigned to yourself" in ok(run_cli("--home", home, "task", "assign", short(spec), "--to", me))

    goals = json.loads(ok(run_cli("--home", home, "goal", "list", "--json")))
    assert [(g["title"], g["status"], g["tasks_open"], g["tasks_total"]) for g in goals] \
        == [("Ship the bridge", "active", 3, 3)]
    assert goals[0]["priority"] == 0.8
    assert f"{short(goal)}  active" in ok(run_cli("--home", home, "goal", "list"))

    tree = ok(run_cli("--home", home, "goal", "show", short(goal))).splitlines()
    assert tree[0].startswith("● Ship the bridge  [active]  3 task(s), 0 done")
    assert "write spec" in tree[1] and "test" in tree[1] and short(spec) in tree[1]  # held by this node (`test`)
    assert "build adapter" in tree[2] and "(unassigned)" in tree[2]
    assert tree[2].startswith("└─") and tree[3].startswith("   └─") and "fixtures" in tree[3]  # under its parent
    shown = json.loads(ok(run_cli("--home", home, "goal", "show", goal, "--json")))
    assert [t["title"] for t in shown["tasks"]] == ["write spec", "build adapter"]
    assert [t["title"] for t in shown["tasks"][1]["subtasks"]] == ["fixtures"]

    tasks = json.loads(ok(run_cli("--home", home, "task", "list", "--goal", short(goal), "--json")))
    assert {t["title"]: t["assigned_to"] for t in tasks} == {"write spec": [me], "build adapter": [], "fixtures": []}
    due = json.loads(ok(run_cli("--home", home, "task", "due", "--json")))
    assert sorted((t["title"], t["due"]) for t in due) == [("build adapter", "unassigned"), ("fixtures", "unassigned")]
    assert "unassigned" in ok(run_cli("--home", home, "task", "due")).splitlines()[0]

    ok(run_cli("--home", home, "task", "update", short(spec), "--status", "in_progress", "--next-check", "2h"))
    ok(run_cli("--home", home, "task", "progress", short(spec), "0.5", "--summary", "outline done"))
    assert "(completed)" in ok(run_cli("--home", home, "task", "done", short(spec)))
    show = ok(run_cli("--home", home, "task", "show", short(spec)))
    assert "[completed]" in show and "progress 50 %  by test  (counted)" in show
    assert "1 done" in ok(run_cli("--home", home, "goal", "show", goal)).splitlines()[0]


def test_bad_input_is_one_readable_line(run_cli, home):
    goal = ok(run_cli("--home", home, "goal", "add", "g")).strip()
    task = ok(run_cli("--home", home, "task", "add", goal, "t")).strip()
    assert "names no task" in one_error_line(run_cli("--home", home, "task", "show", "ZZZZZZZZZZ"))
    assert "names no goal" in one_error_line(run_cli("--home", home, "task", "add", "not-a-goal-id", "x"))
    assert "not an assignee" in one_error_line(run_cli("--home", home, "task", "progress", task, "0.5"))
    assert "from 0 to 1" in one_error_line(run_cli("--home", home, "goal", "update", goal, "--priority", "2"))
    assert "--deadline" in one_error_line(run_cli("--home", home, "task", "add", goal, "x", "--deadline", "someday"))
    assert "--to" in one_error_line(run_cli("--home", home, "task", "assign", task))
    assert "no open offer" in one_error_line(run_cli("--home", home, "task", "accept", task))
    assert_clean_failure(run_cli("--home", home, "task", "update", task, "--status", "sideways"), code=2)


def test_closed_pipes_and_peer_text_are_safe(run_cli, home, fake_user_home):
    goal = ok(run_cli("--home", home, "goal", "add", "red \x1b[31malert\x1b[0m \u202egoal")).strip()
    for n in range(3):
        ok(run_cli("--home", home, "task", "add", goal, f"step {n} \x1b]0;title\x07"))
    shown = ok(run_cli("--home", home, "goal", "show", goal)) + ok(run_cli("--home", home, "task", "list")) \
        + ok(run_cli("--home", home, "goal", "list"))
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "\\u001b[31malert" in shown
    for args in (("goal", "show", goal), ("task", "list"), ("task", "due", "--all")):
        closed = run_into_closed_pipe(["--home", home, *args], fake_user_home)
        assert "Traceback" not in closed.stderr and closed.returncode in (0, 141), closed.stderr
        first_line_only = run_into_closed_pipe(["--home", home, *args], fake_user_home, read_lines=1)
        assert "Traceback" not in first_line_only.stderr, first_line_only.stderr


def test_task_show_gives_the_result_and_task_review_settles_it(run_cli, home):
    """The result of a finished task (its holder's summary) is in the plain ``task show``, not only
    in ``--json``; ``task review`` accepts it, or rejects it with a reason, which reopens the task."""
    goal = ok(run_cli("--home", home, "goal", "add", "Ship the bridge")).strip()
    task = ok(run_cli("--home", home, "task", "add", goal, "load test")).strip()
    me = json.loads(ok(run_cli("--home", home, "status", "--json")))["did"]
    ok(run_cli("--home", home, "task", "assign", short(task), "--to", me))
    ok(run_cli("--home", home, "task", "done", short(task), "--summary", "the span holds 40 t\nno cracks"))
    show = ok(run_cli("--home", home, "task", "show", short(task)))
    assert "result:    completed by test" in show and "  the span holds 40 t\n  no cracks" in show
    assert "review:    not reviewed" in show
    shown = json.loads(ok(run_cli("--home", home, "task", "show", short(task), "--json")))
    assert shown["result"]["summary"] == "the span holds 40 t\nno cracks" and shown["review"] is None
    assert "needs a reason" in one_error_line(run_cli("--home", home, "task", "review", short(task), "reject"))
    assert ok(run_cli("--home", home, "task", "review", short(task), "accept")).strip() == "accepted"
    assert "review:    accepted" in ok(run_cli("--home", home, "task", "show", short(task)))

    again = ok(run_cli("--home", home, "task", "add", goal, "paint it")).strip()
    ok(run_cli("--home", home, "task", "assign", short(again), "--to", me))
    ok(run_cli("--home", home, "task", "done", short(again), "--summary", "painted"))
    rejected = json.loads(ok(run_cli("--home", home, "task", "review", short(again), "reject", "--reason",
                                     "the wrong colour", "--json")))
    assert rejected["verdict"] == "rejected" and rejected["status"] == "pending" and rejected["holders"] == [me]
    show = ok(run_cli("--home", home, "task", "show", short(again)))
    assert "[pending]" in show and "notes:     result rejected: the wrong colour" in show
