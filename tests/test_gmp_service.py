"""The GMP service layer (meshnode/records/gmp/service.py) on two nodes' databases, containers carried
between them by hand exactly as each action's ``push`` list says: a whole delegation
lifecycle, a refusal, refused actions as typed errors, reassignment of a dead or overdue
holder, and the due states ``task due`` lists."""

from __future__ import annotations

import pytest

from meshnode.domain.gmp import build
from meshnode.records.gmp import service
from meshnode.records.gmp.reads import GmpError
from meshnode.domain.gmp.rules import GmpRefused
from meshnode.base.identity.keys import NodeKey
from meshnode.store.database import Database
from meshnode.store.short_ids import short_container_id
from meshnode.store.views_cogsync import load_stored

T = 1_800_000_000_000
HOUR, DAY = 3_600_000, 86_400_000
A, B, C = (NodeKey(bytes([n]) * 32) for n in (1, 2, 3))


@pytest.fixture
def nodes(tmp_path):
    dbs = {k.did: Database(tmp_path / f"{n}.db") for n, k in (("a", A), ("b", B), ("c", C))}
    for db, key, name in ((dbs[A.did], B, "bob"), (dbs[B.did], A, "alice")):  # each knows the other's name
        with db.transaction() as conn:
            conn.execute("INSERT INTO agent_peers (id, name) VALUES (?, ?)", (key.did, name))
    yield dbs
    for db in dbs.values():
        db.close()


def carry(dbs: dict, source: Database, result: dict, only: str | None = None) -> list[str]:
    """Deliver ``result["push"]`` from ``source`` in the order given; returns the DIDs new to each receiver."""
    new = []
    for item in result["push"]:
        if only and item["to"] != only:
            continue
        for did in item["dids"]:
            if dbs[item["to"]].put_container(load_stored(source.conn, did), received_at_ms=T):
                new.append(did)
    return new


def status(db, lineage):
    row = db.conn.execute("SELECT status, assigned_to, progress FROM tasks WHERE lineage = ?", (lineage,)).fetchone()
    return row


def test_a_delegation_from_goal_to_completion_on_two_nodes(nodes):
    a, b = nodes[A.did], nodes[B.did]
    goal = service.goal_add(a, A, T, title="Ship the bridge", participants=[B.did], priority=0.8, tags=["bridge"])
    assert carry(nodes, a, goal) == [goal["did"]]
    task = service.task_add(a, A, T + 1, goal=short_container_id(goal["lineage"]), title="build adapter",
                            tags=["rust"], check_every_s=DAY // 1000)
    # the goal's participants get a new task at once, so that its steps pushed later can be admitted
    assert task["push"] == [{"to": B.did, "dids": [task["did"]]}]
    offer = service.task_offer(a, A, T + 2, task=task["lineage"], candidates=[B.did])
    assert [p["to"] for p in offer["push"]] == [B.did]
    assert offer["push"][0]["dids"][-1] == offer["did"]  # the goal and the task come before the offer
    carry(nodes, a, offer)
    assert status(b, task["lineage"])[0] == "pending"
    assert [r["due"] for r in service.task_due(a, T + 2)] == ["offer_open"]

    receipt = service.on_admitted(b, B, T + 3, [d for p in offer["push"] for d in p["dids"]])
    assert len(receipt["published"]) == 1 and receipt["push"] == [{"to": A.did, "dids": receipt["published"]}]
    assert service.on_admitted(b, B, T + 3, [offer["did"]])["published"] == []  # one receipt per offer
    carry(nodes, b, receipt)

    accept = service.task_accept(b, B, T + 4, task=short_container_id(task["lineage"]))
    assert accept["offer"] == offer["did"]
    carry(nodes, b, accept)
    assigned = service.on_admitted(a, A, T + 5, [accept["did"]])
    assert len(assigned["published"]) == 1
    assert status(a, task["lineage"])[:2] == ("pending", f'["{B.did}"]')
    assert service.on_admitted(a, A, T + 5, [accept["did"]])["published"] == []  # an offer is taken once
    carry(nodes, a, assigned)
    assert status(b, task["lineage"])[:2] == ("pending", f'["{B.did}"]')
    version_receipt = service.on_admitted(b, B, T + 6, assigned["published"])
    assert len(version_receipt["published"]) == 1

    progress = service.task_progress(b, B, T + 7, task=task["lineage"], progress=0.4, summary="half the parsers")
    carry(nodes, b, progress)
    shown = service.task_show(a, task=task["lineage"], now_ms=T + 8)
    assert {e["kind"]: e["counted"] for e in shown["entries"]}["progress"] is True
    assert shown["progress"] == pytest.approx(0.4)

    done = service.task_done(b, B, T + 9, task=task["lineage"], summary="merged")
    assert len(done["versions"]) == 2  # started, then completed
    carry(nodes, b, done)
    assert status(a, task["lineage"])[0] == "completed" and status(a, task["lineage"])[2] == 1.0
    tree = service.goal_show(a, goal=goal["lineage"], now_ms=T + 10)
    assert (tree["tasks_total"], tree["tasks_completed"]) == (1, 1)
    assert tree["tasks"][0]["assignee_names"] == ["bob"]
    assert tree["tasks"][0]["offers"] == []  # taken: no longer open
    holders = service.task_show(a, task=task["lineage"], now_ms=T + 10)["holders"]
    assert [(h["assignee"], h["ended"]) for h in holders] == [(B.did, "completed")]
    assert [g["title"] for g in service.goal_list(b, me=B.did)] == ["Ship the bridge"]
    assert [t["title"] for t in service.task_list(b, me=B.did)] == ["build adapter"]


def _offered(nodes, title: str, now: int) -> tuple[dict, dict]:
    a = nodes[A.did]
    goal = service.goal_add(a, A, now, title=f"goal of {title}", participants=[B.did])
    carry(nodes, a, goal)
    task = service.task_add(a, A, now + 1, goal=goal["lineage"], title=title)
    offer = service.task_offer(a, A, now + 2, task=task["lineage"], candidates=[B.did], expires_s=3600)
    carry(nodes, a, offer)
    return task, offer


def _held_by_b(nodes, title: str, now: int) -> dict:
    a, b = nodes[A.did], nodes[B.did]
    task, offer = _offered(nodes, title, now)
    accept = service.task_accept(b, B, now + 3, task=task["lineage"])
    carry(nodes, b, accept)
    carry(nodes, a, service.on_admitted(a, A, now + 4, [accept["did"]]))
    assert status(a, task["lineage"])[1] == f'["{B.did}"]'
    return task


def test_a_refusal_is_kept_and_assigns_nobody(nodes):
    a, b = nodes[A.did], nodes[B.did]
    task, offer = _offered(nodes, "load test", T)
    refusal = service.task_refuse(b, B, T + 3, task=task["lineage"], reason="no time this week")
    carry(nodes, b, refusal)
    assert service.on_admitted(a, A, T + 4, [refusal["did"]])["published"] == []
    shown = service.task_show(a, task=task["lineage"], now_ms=T + 5)
    assert [e["kind"] for e in shown["entries"]] == ["delegation", "refusal"]
    assert shown["assigned_to"] == [] and shown["due"] == "unassigned"  # its only candidate said no
    with pytest.raises(GmpError) as err:  # the refused offer was B's only one: accepting needs it named
        service.task_accept(b, B, T + 2 * HOUR, task=task["lineage"])
    assert err.value.code == "no_offer"


def test_unauthorized_and_bad_actions_are_typed_errors_before_signing(nodes):
    a, b = nodes[A.did], nodes[B.did]
    task = _held_by_b(nodes, "fixtures", T)
    cases = [
        (lambda: service.task_update(b, B, T + 10, task=task["lineage"], title="mine now"), "not_allowed"),
        (lambda: service.task_offer(b, B, T + 10, task=task["lineage"], candidates=[C.did]), "not_allowed"),
        (lambda: service.task_done(a, A, T + 10, task=task["lineage"]), "not_allowed"),
        (lambda: service.task_progress(b, B, T + 10, task=task["lineage"], progress=1.5), "bad_progress"),
        (lambda: service.task_update(b, B, T + 10, task=task["lineage"], status="sideways"), "bad_status"),
        (lambda: service.task_update(a, A, T + 10, task="did:hmp:container:uEinothinghere" + "x" * 30),
         "unknown_task"),
        (lambda: service.task_update(a, A, T + 10, task="zzzzzzzz"), "unknown_task"),
        (lambda: service.goal_add(a, A, T, title="  "), "bad_args"),
    ]
    for action, code in cases:
        with pytest.raises(GmpError) as err:
            action()
        assert err.value.code == code, (code, err.value.reason)
        assert err.value.reason
    goal = a.conn.execute("SELECT goal_lineage FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone()[0]
    with pytest.raises(GmpError) as err:
        service.goal_update(b, B, T + 10, goal=goal, status="paused")
    assert err.value.code == "not_allowed"
    # a forged version (B assigning C without any acceptance) is refused by admission itself
    head = load_stored(b.conn, status_row_did(b, task["lineage"]))
    forged = build.task(B, {**head.payload, "assigned_to": [B.did, C.did]}, now_ms=T + 11, goal=goal,
                        previous=(head.did,))
    with pytest.raises(GmpRefused) as refused:
        b.put_container(forged, received_at_ms=T + 11)
    assert refused.value.code.startswith("gmp_")
    assert status(b, task["lineage"])[1] == f'["{B.did}"]'


def status_row_did(db, lineage):
    return db.conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (lineage,)).fetchone()[0]


def test_a_dead_holder_is_removed_by_the_creator_after_the_grace(nodes):
    a = nodes[A.did]
    task = _held_by_b(nodes, "adapter", T)
    grace = 600_000
    quiet = service.reassign_stale(a, A, T + HOUR, liveness={B.did: ("dead", T + HOUR - grace + 1)},
                                   dead_grace_ms=grace)
    assert quiet["reassigned"] == []  # dead for less than the grace: a restart costs nothing
    due = service.task_due(a, T + HOUR, liveness={B.did: "dead"})
    assert [(r["lineage"], r["due"]) for r in due] == [(task["lineage"], "holder_dead")]
    moved = service.reassign_stale(a, A, T + HOUR, liveness={B.did: ["dead", T]}, dead_grace_ms=grace)
    assert [(r["task"], r["removed"], r["why"]) for r in moved["reassigned"]] == [(task["lineage"], [B.did],
                                                                                    "reassigned_dead")]
    assert moved["push"] == [{"to": B.did, "dids": [moved["reassigned"][0]["did"]]}]
    assert status(a, task["lineage"])[:2] in (("pending", None), ("pending", "[]"))
    holders = service.task_show(a, task=task["lineage"], now_ms=T + HOUR)["holders"]
    assert [(h["assignee"], h["ended"]) for h in holders] == [(B.did, "reassigned_dead")]
    assert [r["due"] for r in service.task_due(a, T + HOUR)] == ["unassigned"]


def test_an_overdue_holder_is_removed_and_due_states_follow_the_clock(nodes):
    a = nodes[A.did]
    task = _held_by_b(nodes, "report", T)
    row = a.conn.execute("SELECT due_at_ms, overdue_at_ms FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone()
    due_at, overdue_at = row
    assert due_at == T + 4 + DAY and overdue_at == due_at + HOUR  # default check a day on, grace an hour
    assert service.task_due(a, due_at - 1) == []
    assert [r["due"] for r in service.task_due(a, due_at)] == ["due"]
    assert [r["due"] for r in service.task_due(a, overdue_at)] == ["overdue"]
    assert [r["due"] for r in service.task_due(a, due_at - 1, include_all=True)] == [None]
    assert service.reassign_stale(a, A, overdue_at - 1, liveness={}, dead_grace_ms=1)["reassigned"] == []
    moved = service.reassign_stale(a, A, overdue_at, liveness={}, dead_grace_ms=1)
    assert [r["why"] for r in moved["reassigned"]] == ["reassigned_overdue"]


def test_a_cancelled_goal_abandons_its_creators_open_tasks(nodes):
    a = nodes[A.did]
    task = _held_by_b(nodes, "docs", T)
    goal = a.conn.execute("SELECT goal_lineage FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone()[0]
    result = service.goal_cancel(a, A, T + 20, goal=goal, reason="the bridge was cancelled upstream")
    assert result["abandoned"] == [task["lineage"]]
    assert status(a, task["lineage"])[0] == "abandoned"
    assert {p["to"] for p in result["push"]} == {B.did}
    with pytest.raises(GmpError) as err:
        service.task_add(a, A, T + 21, goal=goal, title="more")
    assert err.value.code == "goal_closed"


def test_participants_decompose_a_goal_and_strangers_cannot(nodes):
    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="census", participants=[B.did])
    carry(nodes, a, goal)
    task = service.task_add(b, B, T + 1, goal=goal["lineage"], title="count the north")  # cites the goal version
    assert task["push"] == [{"to": A.did, "dids": [task["did"]]}]
    carry(nodes, b, task)
    assert a.conn.execute("SELECT creator_did FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone() == (B.did,)
    c.put_container(load_stored(a.conn, goal["did"]), received_at_ms=T)  # C holds the goal, takes no part in it
    with pytest.raises(GmpError) as err:
        service.task_add(c, C, T + 2, goal=goal["lineage"], title="count the south")
    assert err.value.code == "not_allowed" and "participants" in err.value.reason


def test_a_participant_added_later_gets_every_version_of_the_goal(nodes):
    a, c = nodes[A.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="harvest", participants=[B.did])
    service.goal_update(a, A, T + 1, goal=goal["lineage"], title="the harvest")
    added = service.goal_update(a, A, T + 2, goal=goal["lineage"], add_participants=[C.did])
    to_c = [p["dids"] for p in added["push"] if p["to"] == C.did][0]
    assert len(to_c) == 3 and to_c[0] == goal["did"] and to_c[-1] == added["did"]
    carry(nodes, a, added, only=C.did)
    assert c.conn.execute("SELECT name, participants FROM goals").fetchone()[0] == "the harvest"


def test_the_creators_node_joins_a_fork_of_its_task(nodes):
    a, b = nodes[A.did], nodes[B.did]
    task = _held_by_b(nodes, "survey", T)
    started = service.task_update(b, B, T + 10, task=task["lineage"], status="in_progress")  # B starts ...
    service.task_update(a, A, T + 11, task=task["lineage"], title="survey the ford")  # ... while A edits
    carry(nodes, b, started)
    assert a.conn.execute("SELECT forks FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone() == (1,)
    joined = service.on_admitted(a, A, T + 12, [started["did"]])
    assert len(joined["published"]) == 1 and joined["push"] == [{"to": B.did, "dids": joined["published"]}]
    row = a.conn.execute("SELECT forks, status, name, reason FROM tasks WHERE lineage = ?", (task["lineage"],)).fetchone()
    assert row == (0, "in_progress", "survey the ford", "merged")
    assert service.on_admitted(a, A, T + 13, joined["published"])["published"] == []  # no fork, nothing to join


def test_a_contested_task_goes_to_the_nominee_an_approved_vote_selects(nodes):
    """delegation_rule cogconsensus (gmp.md 6.3): a participant nominates, participants vote, the
    creator offers to the nominee citing the approved result; an offer without one is refused."""
    from meshnode.domain.consensus.cogvote import Rule
    from meshnode.records.consensus import cast_vote, publish_result

    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="Choose well", participants=[C.did])
    carry(nodes, a, goal)
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="contested", rule="cogconsensus")
    carry(nodes, a, {"push": [{"to": C.did, "dids": [task["did"]]}]})
    with pytest.raises(GmpError) as refused:  # the creator alone does not choose
        service.task_offer(a, A, T + 2, task=task["lineage"], candidates=[B.did])
    assert refused.value.code == "needs_decision"
    with pytest.raises(GmpError) as stranger:
        service.task_nominate(b, B, T + 2, task=task["lineage"], candidate=B.did)
    assert stranger.value.code in ("unknown_task", "not_allowed")
    nomination = service.task_nominate(c, C, T + 3, task=task["lineage"], candidate=B.did)
    carry(nodes, c, nomination, only=A.did)
    audience = {r[0] for r in a.conn.execute("SELECT did FROM gmp_audience WHERE goal_lineage = ?", (goal["lineage"],))}
    assert B.did not in audience  # a nominee is not given the goal before an offer
    votes = [cast_vote(a, A, nomination["did"], 1, now_ms=T + 4)]
    votes.append(cast_vote(c, C, nomination["did"], 1, now_ms=T + 4))
    a.put_container(votes[1], received_at_ms=T + 5)
    with a.transaction() as conn:  # A trusts C and itself enough for the votes to weigh
        for did in (A.did, C.did):
            conn.execute("INSERT OR IGNORE INTO agent_peers (id, name) VALUES (?, ?)", (did, did[-6:]))
    result = publish_result(a, A, nomination["did"], rule=Rule("general", 86_400_000, 1, 0.0), now_ms=T + 6)
    assert result.payload["state"] == "approved", result.payload
    offer = service.task_offer(a, A, T + 7, task=task["lineage"], basis=result.did)
    assert offer["candidates"] == [B.did]
    carry(nodes, a, offer, only=B.did)  # the nomination, votes and result travel with the offer
    accept = service.task_accept(b, B, T + 8, task=task["lineage"])
    carry(nodes, b, accept)
    assigned = service.on_admitted(a, A, T + 9, [accept["did"]])
    assert len(assigned["published"]) == 1
    carry(nodes, a, assigned, only=B.did)
    assert status(b, task["lineage"])[:2] == ("pending", f'["{B.did}"]')
    shown = service.task_show(a, task=task["lineage"], now_ms=T + 10)
    assert "nomination" in {e["kind"] for e in shown["entries"]}


def test_every_step_of_a_task_is_pushed_to_the_goals_participants_and_admitted_there(nodes):
    """Issue 35, defect 6: a participant that neither created nor holds a task got its steps only
    at the next sync, and only the latest. Now each version and progress entry goes to the goal's
    participants at once (``task_audience``), and each step is kept: C sees the 40 % step."""
    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="Ship the bridge", participants=[B.did, C.did])
    carry(nodes, a, goal)
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="build adapter")
    assert sorted(p["to"] for p in task["push"]) == sorted([B.did, C.did])
    carry(nodes, a, task)
    offer = service.task_offer(a, A, T + 2, task=task["lineage"], candidates=[B.did])
    carry(nodes, a, offer)
    accept = service.task_accept(b, B, T + 3, task=task["lineage"])
    carry(nodes, b, accept)
    assigned = service.on_admitted(a, A, T + 4, [accept["did"]])
    assert C.did in [p["to"] for p in assigned["push"]]  # the assigning version too
    carry(nodes, a, assigned)
    assert status(c, task["lineage"])[1] == f'["{B.did}"]'
    steps = []
    for n, value in enumerate((0.4, 0.7)):
        step = service.task_progress(b, B, T + 10 + n, task=task["lineage"], progress=value, summary=f"{value:.0%}")
        assert sorted(p["to"] for p in step["push"]) == sorted([A.did, C.did])
        assert carry(nodes, b, step, only=C.did) == [step["did"]]  # admitted by C at once
        assert status(c, task["lineage"])[2] == value  # C sees this step, before any later one
        steps.append(step["did"])
    shown = service.task_show(c, task=task["lineage"], now_ms=T + 20)
    assert [(e["did"], e["counted"]) for e in shown["entries"] if e["kind"] == "progress"] == \
        [(d, True) for d in steps]  # kept, not collapsed
    done = service.task_done(b, B, T + 30, task=task["lineage"])
    assert C.did in [p["to"] for p in done["push"]]
    carry(nodes, b, done, only=C.did)
    assert status(c, task["lineage"])[0] == "completed"


def test_a_meshconsensus_task_goes_to_the_bound_nominee_and_waits_for_the_commit_elsewhere(nodes):
    """gmp.md 6.3 step 3 through the store: a validator's request names the earliest nomination, the
    delegator offers what the first decision binds, and a node that has not decided that height holds
    the assigning version pending until it has (then ``release_commits`` admits it)."""
    from meshnode.domain.gmp.contest import delegation_value
    from meshnode.store import decisions

    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="Choose by committee", participants=[B.did, C.did])
    carry(nodes, a, goal)
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="committee", rule="meshconsensus")
    carry(nodes, a, task)
    nomination = service.task_nominate(c, C, T + 2, task=task["lineage"], candidate=B.did)
    carry(nodes, c, nomination)
    value = delegation_value(task["lineage"], task["did"], nomination["did"])
    assert service.mesh_requests(a, T + 3) == [value]
    assert service.mesh_choices(a, A.did, T + 3) == []  # nothing decided yet: nothing to offer
    for db in (a, b):  # decided at height 0 (c has not caught up)
        decisions.save_decision(db, "e1-c", 0, [value], 0, [], T + 4)
    assert service.mesh_requests(a, T + 5) == []
    [choice] = service.mesh_choices(a, A.did, T + 5)
    assert (choice["candidate"], choice["basis"]) == (B.did, {"committee": "e1-c", "height": 0})
    with pytest.raises(GmpError):  # the creator may not pick another
        service.task_offer(a, A, T + 6, task=task["lineage"], candidates=[C.did])
    offer = service.task_offer(a, A, T + 6, task=task["lineage"], basis=choice["basis"])
    assert offer["candidates"] == [B.did]
    carry(nodes, a, offer, only=B.did)
    accept = service.task_accept(b, B, T + 7, task=task["lineage"])
    carry(nodes, b, accept)
    assigned = service.on_admitted(a, A, T + 8, [accept["did"]])
    [version] = assigned["published"]
    carry(nodes, a, {"push": [{"to": C.did, "dids": [offer["did"], accept["did"]]}]})
    assert not c.put_container(load_stored(a.conn, version), received_at_ms=T + 9)  # height 0 not decided at c
    assert service.release_commits(c) == []
    decisions.save_decision(c, "e1-c", 0, [value], 0, [], T + 10)
    assert service.release_commits(c) == [version]
    assert status(c, task["lineage"])[1] == f'["{B.did}"]'


def test_a_steward_takes_an_overdue_task_over_at_its_rank_time_and_tells_its_person(nodes):
    """gmp.md section 8: C, the only steward (A created the task, B holds it), acts at overdue_at +
    check_grace_s / 4, not before; its takeover is admitted by B, and C's person gets a notice."""
    from meshnode.records.reactor import person_lines

    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="Keep going", participants=[B.did, C.did])
    carry(nodes, a, goal)
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="watched", grace_s=600)
    carry(nodes, a, task)
    offer = service.task_offer(a, A, T + 2, task=task["lineage"], candidates=[B.did])
    carry(nodes, a, offer)
    accept = service.task_accept(b, B, T + 3, task=task["lineage"])
    carry(nodes, b, accept)
    carry(nodes, a, service.on_admitted(a, A, T + 4, [accept["did"]]))
    checked = service.task_update(b, B, T + 5, task=task["lineage"], next_check_ms=T + 10)
    carry(nodes, b, checked)
    overdue = T + 10 + 600_000
    assert service.take_over(c, C, overdue + 150_000 - 1)["taken"] == []  # rank 0: a quarter grace after
    assert service.take_over(b, B, overdue + 150_000)["taken"] == []  # the holder is no steward
    taken = service.take_over(c, C, overdue + 150_000)
    [moved] = taken["taken"]
    assert (moved["removed"], moved["rank"]) == ([B.did], 0)
    carry(nodes, c, taken)
    assert status(b, task["lineage"])[:2] == ("pending", "[]")
    shown = service.task_show(b, task=task["lineage"], now_ms=overdue + 150_001)
    assert [(h["assignee"], h["ended"], h["ended_by"]) for h in shown["holders"]] == [
        (B.did, "reassigned_overdue", C.did)]
    [line] = person_lines.unread(c, 10)
    assert line["event_type"] == "gmp.takeover" and "watched" in line["summary"]
    assert service.take_over(c, C, overdue + 200_000)["taken"] == []  # taken once
    # the steward offers it again by itself, its creator's node does not as well (A, back, holding the
    # takeover but not yet the steward's offer, offered it too: two acceptors got it)
    from meshnode.net.mesh_gmp_queries import taken_back

    assert [t for t, _ in taken_back(c, C.did, overdue + 200_000, 10)] == [task["lineage"]]
    assert taken_back(a, A.did, overdue + 200_000, 10) == []


def test_cogconsensus_picks_the_best_approved_nomination_once_the_vote_is_over(nodes):
    """gmp.md 6.3 step 2: after vote_ms the delegator's node offers to the approved nomination with the
    highest score, citing a result it signs (once: an offer made again reuses it)."""
    a = nodes[A.did]
    goal = service.goal_add(a, A, T, title="Choose by vote", participants=[B.did, C.did])
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="contested", rule="cogconsensus")
    weak = service.task_nominate(a, A, T + 2, task=task["lineage"], candidate=B.did)["did"]
    strong = service.task_nominate(a, A, T + 3, task=task["lineage"], candidate=C.did)["did"]
    for key, on_weak in ((A, 1), (B, 1), (C, 0)):  # strong: three approvals; weak: two and a neutral
        a.put_container(_vote(key, weak, on_weak), received_at_ms=T + 5)
        a.put_container(_vote(key, strong, 1), received_at_ms=T + 5)
    assert service.cog_choices(a, A, T + 6, vote_ms=HOUR) == []  # the vote is not over
    a.conn.execute("PRAGMA query_only = ON")  # the tallies are made on a reader: no write, no writer held
    try:
        [pick] = service.cog_picks(a, A.did, T + 3 + HOUR, vote_ms=HOUR)
    finally:
        a.conn.execute("PRAGMA query_only = OFF")
    [choice] = service.cog_choices(a, A, T + 3 + HOUR, vote_ms=HOUR, picks=[pick])
    assert (choice["nomination"], choice["candidate"]) == (strong, C.did)
    [again] = service.cog_choices(a, A, T + 4 + HOUR, vote_ms=HOUR)
    assert again["result"] == choice["result"]
    offer = service.task_offer(a, A, T + 5 + HOUR, task=task["lineage"], basis=choice["result"])
    assert offer["candidates"] == [C.did]
    assert service.cog_choices(a, A, T + 6 + HOUR, vote_ms=HOUR) == []  # an offer is open


def _vote(key, target: str, value: int):
    from meshnode.domain.consensus.cogvote import make_vote

    return make_vote(key, target, value, now_ms=T + 4)


def test_every_goal_and_task_version_the_delegator_writes_goes_to_the_goals_whole_audience(nodes):
    """Issue 37: an assignee that is not a participant (B holds one task of a goal whose only
    participant is C) got the creator's own task versions and the goal's closing only at the next
    sync. Every container under a goal now goes at once to its whole audience (gmp.md section 7)."""
    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    goal = service.goal_add(a, A, T, title="Ship the bridge", participants=[C.did])
    carry(nodes, a, goal)
    first = service.task_add(a, A, T + 1, goal=goal["lineage"], title="build adapter")
    carry(nodes, a, first)
    carry(nodes, a, service.task_offer(a, A, T + 2, task=first["lineage"], candidates=[B.did]))
    accept = service.task_accept(b, B, T + 3, task=first["lineage"])
    assert {p["to"] for p in accept["push"]} == {A.did, C.did}  # the acceptance too, not only to the delegator
    carry(nodes, b, accept)
    carry(nodes, a, service.on_admitted(a, A, T + 4, [accept["did"]]))

    def to(result: dict, who: NodeKey) -> list[str]:
        return [d for p in result["push"] if p["to"] == who.did for d in p["dids"]]

    second = service.task_add(a, A, T + 5, goal=goal["lineage"], title="paint it")  # a task B does not hold
    assert to(second, B) == [second["did"]] and to(second, C) == [second["did"]]
    edit = service.task_update(a, A, T + 6, task=second["lineage"], title="paint it red")  # the delegator's own
    assert to(edit, B) == [edit["did"]]
    offer = service.task_offer(a, A, T + 7, task=second["lineage"], candidates=[C.did])
    assert offer["did"] in to(offer, B)  # who is offered what, seen by all who work on the goal
    for step in (second, edit):
        carry(nodes, a, step, only=B.did)
    closed = service.goal_update(a, A, T + 8, goal=goal["lineage"], status="completed")
    assert closed["did"] in to(closed, B) and closed["did"] in to(closed, C)
    carry(nodes, a, closed, only=B.did)
    assert b.conn.execute("SELECT status FROM goals WHERE lineage = ?", (goal["lineage"],)).fetchone() == ("completed",)
    assert status(b, second["lineage"])[0] == "abandoned"  # the creator's node abandoned it, B sees it at once


def test_a_holder_that_completed_while_being_reassigned_keeps_its_completion_and_the_join_rolls_back(nodes):
    """gmp.md section 5: the creator takes the task back from B (dead to it) and gives it to C while B,
    not yet told, completes it. B's completion reaching the creator's node joins the fork keeping
    the completion, removing C, with a rollback entry contradicting the reassignment."""
    a, b, c = nodes[A.did], nodes[B.did], nodes[C.did]
    task = _held_by_b(nodes, "survey", T)
    lineage = task["lineage"]
    started = service.task_update(b, B, T + 10, task=lineage, status="in_progress")
    carry(nodes, b, started, only=A.did)
    taken = service.reassign_stale(a, A, T + 20, liveness={B.did: ("dead", T)}, dead_grace_ms=1)
    assert [r["removed"] for r in taken["reassigned"]] == [[B.did]]
    offer = service.task_offer(a, A, T + 21, task=lineage, candidates=[C.did])
    carry(nodes, a, offer, only=C.did)
    accept = service.task_accept(c, C, T + 22, task=lineage)
    carry(nodes, c, accept, only=A.did)
    assigned = service.on_admitted(a, A, T + 23, [accept["did"]])
    assert status(a, lineage)[1] == f'["{C.did}"]'
    done = service.task_done(b, B, T + 24, task=lineage, summary="surveyed")  # B never heard it was removed
    carry(nodes, b, done, only=A.did)
    assert a.conn.execute("SELECT forks FROM tasks WHERE lineage = ?", (lineage,)).fetchone() == (1,)
    joined = service.on_admitted(a, A, T + 25, [done["did"]])
    assert len(joined["published"]) == 2  # the join and the rollback
    join, rollback = (load_stored(a.conn, d) for d in joined["published"])
    assert (join.payload["status"], join.payload["assigned_to"], join.payload["reason"]) == \
        ("completed", [B.did], "merged")
    assert rollback.payload["entry_type"] == "rollback"
    assert rollback.related["contradicts"] == [taken["reassigned"][0]["did"], assigned["published"][0]]
    row = a.conn.execute("SELECT forks, status, assigned_to FROM tasks WHERE lineage = ?", (lineage,)).fetchone()
    assert row == (0, "completed", f'["{B.did}"]')
    shown = service.task_show(a, task=lineage, now_ms=T + 26)
    assert [(e["kind"], e["counted"]) for e in shown["entries"] if e["kind"] == "rollback"] == [("rollback", True)]
    assert (B.did, "completed") in [(h["assignee"], h["ended"]) for h in shown["holders"]]
    for who in (B, C):  # the holder finished and the one removed both learn it at once
        assert {join.did, rollback.did} <= {d for p in joined["push"] if p["to"] == who.did for d in p["dids"]}


def test_a_validator_finds_no_delegation_value_valid_for_a_nomination_that_does_not_count(nodes):
    """gmp.md 6.3 step 3: anyone may publish a nomination (admitted, not counted); a value binding one
    signed by a stranger would let the stranger, or a validator for itself, be given the task by the
    creator's own node. Only a counted nomination (the goal's creator or a participant) is valid."""
    from meshnode.base.container import format_ms
    from meshnode.domain.gmp.contest import delegation_value
    from meshnode.records.gmp.delegate import value_holds

    a = nodes[A.did]
    goal = service.goal_add(a, A, T, title="Choose by committee", participants=[C.did])
    task = service.task_add(a, A, T + 1, goal=goal["lineage"], title="committee", rule="meshconsensus")
    own = build.entry(B, "delegation", {"task_version": task["did"], "candidates": [B.did], "selection":
                                        "meshconsensus", "nomination": True, "expires_at": format_ms(T + DAY)},
                      now_ms=T + 2, about=task["lineage"])  # B, no participant, nominates itself
    assert a.put_container(own, received_at_ms=T + 2)
    assert not value_holds(a, delegation_value(task["lineage"], task["did"], own.did))
    counted = service.task_nominate(a, C, T + 3, task=task["lineage"], candidate=B.did)  # a participant's
    assert value_holds(a, delegation_value(task["lineage"], task["did"], counted["did"]))


def test_the_rollback_of_a_join_contradicts_the_reassignment_not_an_edit_made_before_it(nodes):
    """gmp.md section 5: the creator edits the title while B holds the task (B never sees the edit),
    then takes it back; B's completion is kept by the join, which keeps the new title too. The
    rollback undoes the reassignment only: the edit before it is not contradicted."""
    a, b = nodes[A.did], nodes[B.did]
    lineage = _held_by_b(nodes, "survey", T)["lineage"]
    edit = service.task_update(a, A, T + 10, task=lineage, title="survey the north side")
    taken = service.reassign_stale(a, A, T + 20, liveness={B.did: ("dead", T)}, dead_grace_ms=1)
    done = service.task_done(b, B, T + 24, task=lineage, summary="surveyed")
    carry(nodes, b, done, only=A.did)
    join, rollback = (load_stored(a.conn, d) for d in service.on_admitted(a, A, T + 25, [done["did"]])["published"])
    assert (join.payload["title"], join.payload["assigned_to"]) == ("survey the north side", [B.did])
    assert rollback.related["contradicts"] == [taken["reassigned"][0]["did"]], edit["did"]


def test_a_task_versions_first_delegation_decision_is_found_by_index_not_by_reading_every_decision(nodes):
    """The GMP check looks up the first decision of each unheld meshconsensus task version (and
    admission does for each assignment): with every decided value read each time, a check over 32
    tasks took seconds once 100 000 values were decided. The lookup searches an index."""
    from meshnode.domain.gmp.contest import delegation_value
    from meshnode.records.gmp.store_admission import first_gmp_delegation
    from meshnode.store import decisions

    a = nodes[A.did]
    value = delegation_value("did:t:1", "did:v:1", "did:n:1")
    for height, values in enumerate(([b"other", b'{"kind":"gmp_delegation"\xff'], [value], [value[:-1] + b" }"])):
        decisions.save_decision(a, "e1-c", height, values, 0, [], T)
    statements: list[str] = []
    a.conn.set_trace_callback(statements.append)
    try:
        assert first_gmp_delegation(a.conn, "did:t:1", "did:v:1") == ("e1-c", 1, 0, "did:n:1")
    finally:
        a.conn.set_trace_callback(None)
    [lookup] = [s for s in statements if "consensus_decisions" in s]
    plan = " ".join(str(r[3]) for r in a.conn.execute("EXPLAIN QUERY PLAN " + lookup))
    assert "USING INDEX consensus_decisions_gmp_delegation" in plan, plan


def test_the_newest_assignments_without_a_receipt_are_listed_first_to_be_pushed_again(nodes):
    """gmp.md 6.1 step 5: a version assigning someone is pushed again, twice, while no receipt for
    it came back. Those pushed twice already stay unreceipted (listed) while the holding lasts:
    oldest first, they took every place of the bounded list and a new assignment was never retried."""
    from meshnode.net.mesh_gmp_queries import unreceipted_assignments

    a = nodes[A.did]
    old, new = (_held_by_b(nodes, title, T + i * 100) for i, title in enumerate(("first", "second")))
    [shown] = a.conn.execute("SELECT container_did FROM tasks WHERE lineage = ?", (new["lineage"],)).fetchone()
    assert unreceipted_assignments(a, A.did, T + HOUR, limit=1) == [(shown, B.did, new["lineage"])]
    assert len(unreceipted_assignments(a, A.did, T + HOUR)) == 2
