"""An offer stops waiting for the agent once its task is held through another offer of it (issue 37,
found by bench/team.py's killed_holder run: the creator's node and its agent both offered a task taken
back; the candidate accepted one, and the other stayed in its prompt, accepted again at every tick and
refused with "you hold this task already", so the task was never worked on)."""

from __future__ import annotations

from meshnode.engines.cognition import contexts
from meshnode.records.gmp import reads, service
from test_cognition_gmp import A, B, T, copy_all, dbs, run  # noqa: F401 (dbs: the fixture)


def test_a_second_offer_of_a_task_already_held_no_longer_waits(dbs):
    a, b = dbs[A.did], dbs[B.did]
    goal = run(a, A, T, "goal_add", {"title": "map the river"})
    task = run(a, A, T + 1, "task_add", {"title": "survey the ford", "goal": goal["goal"]})
    first = run(a, A, T + 2, "task_delegate", {"task": task["task"], "to": [B.did]})
    second = run(a, A, T + 3, "task_delegate", {"task": task["task"], "to": [B.did]})
    copy_all(a, b)
    offered = contexts.waiting(b, B.did, T + 4)["offers_to_answer"]
    assert sorted(o["offer"] for o in offered) == sorted(x["did"][21:31] for x in (first, second))
    accepted = run(b, B, T + 4, "task_accept", {"task": task["task"], "offer": first["did"]})
    copy_all(b, a)
    assert service.on_admitted(a, A, T + 5, [accepted["did"]])["published"]  # A's node assigns B
    copy_all(a, b)
    waiting = contexts.waiting(b, B.did, T + 6)
    assert [t["task"] for t in waiting["tasks_you_hold"]] == [task["task"]]
    assert "offers_to_answer" not in waiting  # the second offer is moot: B holds the task
    lineage = reads.resolve(a, task["task"], "task")
    assert reads.open_offers(a, [lineage], T + 6) == {}  # nor open in the creator's tree (goal show, task due)


def test_goal_show_names_no_open_offer_on_a_finished_task():
    """The same moot offer in the person's tree (``goal show``): a task completed by the holder of one
    offer showed "offer open to carol" for the other."""
    from meshnode.faces.cli.gmp import _due_text

    carol = "did:key:z6Mkcarol"
    tree = {"names": {carol: "carol"}}
    task = {"assigned_to": [carol], "status": "completed", "due": None, "offers": [{"candidates": [carol]}]}
    assert _due_text(tree, task, False) == "carol"
    assert "offer open to carol" in _due_text(tree, {**task, "status": "in_progress"}, False)
