"""The GMP view rules (gmp.md sections 4.3, 5, 8): counting, shown progress, shown head, holders,
task state and due state, each on real signed lineages (tests/gmp_fixtures.Story)."""

from __future__ import annotations

import pytest

from gmp_fixtures import HOUR, A, B, C, M, Story, World
from meshnode.domain.gmp import view


# --- counting (section 4.3) ------------------------------------------------------------------------------


def counted(w: World, e) -> tuple:
    return view.counts(w.ok(e), w.held)


def test_progress_counts_from_an_assignee_of_the_named_version():
    s = Story()
    w = s.w
    assert counted(w, w.entry(B, "progress", s.lineage, progress=0.5, task_version=s.t3.did)) == (True, None)
    assert counted(w, w.entry(C, "progress", s.lineage, progress=0.9, task_version=s.t3.did)) == \
        (False, "not_assignee")
    # the candidate before the version assigning it: not yet an assignee
    assert counted(w, w.entry(B, "progress", s.lineage, progress=0.1, task_version=s.t1.did)) == \
        (False, "not_assignee")
    other = w.ok(w.task(s.g, title="other"))
    assert counted(w, w.entry(B, "progress", s.lineage, progress=0.5, task_version=other.did)) == \
        (False, "no_version")
    assert counted(w, w.entry(B, "execution_log", s.lineage, summary="ran it")) == (False, "no_version")
    assert counted(w, w.entry(B, "blocker", s.lineage, task_version=s.t3.did)) == (True, None)


def test_offers_count_from_delegators_nominations_from_participants():
    s = Story()
    w = s.w
    assert view.counts(s.offer, w.held) == (True, None)
    assert counted(w, w.offer(s.lineage, s.t3, to=(C,), key=B)) == (False, "not_delegator")
    nom = dict(task_version=s.t3.did, candidates=[C.did], selection="cogconsensus", expires_at=w.t + HOUR,
               nomination=True)
    assert counted(w, w.entry(M, "delegation", s.lineage, see_also=[s.g.did], **nom)) == (False, "not_participant")
    assert counted(w, w.entry(C, "delegation", s.lineage, see_also=[s.g.did], **nom)) == (True, None)
    assert counted(w, w.entry(C, "delegation", s.lineage, **nom)) == (False, "not_participant")
    assert counted(w, w.entry(A, "delegation", s.lineage, **nom)) == (True, None)  # the goal's creator


def test_answers_count_from_candidates_of_real_offers():
    s = Story()
    w = s.w
    assert view.counts(s.acc, w.held) == (True, None)
    assert counted(w, w.entry(C, "acceptance", s.lineage, offer=s.offer.did)) == (False, "not_candidate")
    assert counted(w, w.entry(C, "refusal", s.lineage, offer=s.offer.did, reason="busy")) == (False, "not_candidate")
    assert counted(w, w.entry(B, "refusal", s.lineage, offer=s.offer.did, reason="busy")) == (True, None)
    nom = w.ok(w.entry(A, "delegation", s.lineage, task_version=s.t3.did, candidates=[C.did],
                       selection="cogconsensus", expires_at=w.t + HOUR, nomination=True))
    assert counted(w, w.entry(C, "acceptance", s.lineage, offer=nom.did)) == (False, "nomination")
    assert counted(w, w.entry(C, "acceptance", s.lineage, offer=s.t3.did)) == (False, "not_offer")


def test_receipts_only_for_oneself():
    s = Story()
    w = s.w
    assert view.counts(s.receipt, w.held) == (True, None)
    assert counted(w, w.entry(C, "receipt", s.lineage, received=s.offer.did, received_at=w.t)) == \
        (False, "not_recipient")
    assert counted(w, w.entry(B, "receipt", s.lineage, received=s.t2.did, received_at=w.t)) == (True, None)
    assert counted(w, w.entry(C, "receipt", s.lineage, received=s.t2.did, received_at=w.t)) == \
        (False, "not_recipient")


def test_rollback_by_the_owner_or_the_creator():
    s = Story()
    w = s.w
    assert counted(w, w.entry(B, "rollback", s.lineage, contradicts=[s.acc.did])) == (True, None)
    assert counted(w, w.entry(A, "rollback", s.lineage, contradicts=[s.acc.did])) == (True, None)
    assert counted(w, w.entry(C, "rollback", s.lineage, contradicts=[s.acc.did])) == (False, "not_owner")


def test_free_kinds():
    s = Story()
    w = s.w
    assert counted(w, w.entry(M, "reflection", s.lineage, summary="hm")) == (True, None)
    assert counted(w, w.entry(M, "ethical_result", s.lineage, summary="no")) == (True, None)
    assert counted(w, w.entry(B, "x-metrics", s.lineage, details={"n": 1})) == (False, "extension_kind")


def test_shown_progress_newest_counted_by_current_assignee():
    s = Story()
    w = s.w
    e1 = w.ok(w.entry(B, "progress", s.lineage, progress=0.3, task_version=s.t3.did))
    e2 = w.ok(w.entry(C, "progress", s.lineage, progress=0.9, task_version=s.t3.did))
    pairs = [(e, view.counts(e, w.held)[0]) for e in (e1, e2)]
    assert view.shown_progress(s.t3, pairs) == 0.3


# --- shown head, holders, due (sections 5, 8) ----------------------------------------------------------


def test_shown_head_creator_first_then_holder_over_takeover_then_time():
    s = Story()
    w = s.w
    holder = w.ok(s.by(B, [s.t3], next_check_at=w.t + HOUR, reason="check_in"))
    creator = w.ok(s.by(A, [s.t3], notes="creator"))
    assert view.shown_head([holder, creator], A.did) is creator
    w.t = view.task_state(s.t3).overdue_at_ms
    take = w.ok(s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g]))
    assert take.timestamp_ms > holder.timestamp_ms
    assert view.shown_head([take, holder], A.did) is holder  # the holder checked in before the steward acted
    later = w.ok(s.by(B, [s.t3], notes="later"))
    assert view.shown_head([holder, later], A.did) is later
    assert view.shown_head([later, holder, creator, take], A.did) is creator
    assert {h.did for h in view.heads_of(w.held.all_versions(s.lineage))} == {later.did, holder.did, creator.did,
                                                                                take.did}


def given_to_c(s: Story) -> tuple:
    """The creator takes the story's task from B (dead) and gives it to C: (the removal, the version assigning C)."""
    w = s.w
    dead = w.ok(s.by(A, [s.t3], status="pending", assigned=[], reason="reassigned_dead"))
    o = w.ok(w.offer(s.lineage, dead, to=(C,)))
    acc = w.ok(w.entry(C, "acceptance", s.lineage, offer=o.did))
    return dead, w.ok(s.by(A, [dead], assigned=[C], agreed=[acc], reason="assigned", next_check_at=w.t + HOUR))


def test_a_join_keeps_a_completion_made_while_being_reassigned_not_a_failure():
    """Section 5: the creator removed B (and gave the task to C) while B completed it: the join keeps
    B's completion and assignees, and names the creator's side of the fork for a rollback. B's
    failure instead is no finished work: the creator's head stands, nothing is rolled back."""
    s = Story()
    w = s.w
    removed, to_c = given_to_c(s)
    done = w.ok(s.by(B, [s.t3], status="completed", reason="completed", progress=1.0))
    joined = view.join([to_c, done], A.did, w.held)
    assert (joined.base, joined.contradicts) == (to_c, (removed.did, to_c.did))
    p = joined.payload
    assert (p["status"], p["assigned_to"], p["progress"], p["reason"]) == ("completed", [B.did], 1.0, "merged")
    failed = w.ok(s.by(B, [s.t3], status="failed", reason="failed"))
    joined = view.join([to_c, failed], A.did, w.held)
    assert joined.contradicts == () and joined.payload["assigned_to"] == [C.did]
    assert (joined.payload["status"], joined.payload["reason"]) == ("pending", "merged")
    assert view.join([done, failed], A.did, w.held) is None  # no head of the creator's: nothing it can join


def test_holder_spans_record_why_holding_ended():
    s = Story()
    w = s.w
    dead, to_c = given_to_c(s)
    done = w.ok(s.by(C, [w.ok(s.by(C, [to_c], status="in_progress"))], status="completed"))
    spans = view.holder_spans(view.path_to(done, w.held))
    assert [(sp.assignee, sp.from_version, sp.to_version, sp.ended) for sp in spans] == [
        (B.did, s.t2.did, dead.did, "reassigned_dead"), (C.did, to_c.did, done.did, "completed")]
    assert view.holder_spans([s.t1, s.t2, s.t3])[0].to_version is None


def test_task_state_due_and_overdue():
    s = Story()
    st = view.task_state(s.t3)
    assert st.due_at_ms == s.check_ms and st.overdue_at_ms == s.check_ms + 3_600_000
    v = s.w.ok(s.by(A, [s.t3], deadline=s.check_ms - 5, check_grace_s=600))
    st = view.task_state(v)
    assert (st.due_at_ms, st.overdue_at_ms, st.grace_ms) == (s.check_ms - 5, s.check_ms - 5 + 600_000, 600_000)
    assert view.task_state(s.t1).due_at_ms is None


@pytest.mark.parametrize("args,expect", [
    (dict(status="completed"), None),
    (dict(goal_status="cancelled"), "goal_closed"),
    (dict(liveness={"b": "dead"}), "holder_dead"),
    (dict(now_ms=200), "overdue"),
    (dict(now_ms=150), "due"),
    (dict(now_ms=50), None),
    (dict(now_ms=50, forks=1), "fork"),
    (dict(assigned_to=()), "unassigned"),
    (dict(assigned_to=(), offer_open=True), "offer_open"),
    (dict(assigned_to=(), rule="meshconsensus"), "needs_decision"),
])
def test_due_state(args, expect):
    base = dict(status="in_progress", assigned_to=("b",), due_at_ms=100, overdue_at_ms=200, liveness={"b": "ok"},
                offer_open=False, forks=0, goal_status="active", rule="creator", now_ms=50)
    assert view.due_state(**{**base, **args}) == expect


def test_goal_fields_defaults():
    s = Story()
    f = view.goal_fields(s.g, A.did)
    assert f["priority"] == 0.5 and f["audience"] == "participants" and f["participants"] == [A.did, B.did, C.did]
    assert f["parent_goal"] is None


def test_steward_schedule_ranks_participants_but_not_holders():
    import hashlib

    s = Story()
    overdue = view.task_state(s.t3).overdue_at_ms
    sched = view.steward_schedule(s.lineage, s.t3, [A.did, B.did, C.did, C.did])
    assert B.did not in dict(sched) and len(sched) == 2
    order = sorted([A.did, C.did], key=lambda d: hashlib.sha256((s.lineage + s.t3.did + d).encode()).digest())
    assert sched == [(order[0], overdue + 900_000), (order[1], overdue + 1_800_000)]
    assert view.steward_schedule(s.lineage, s.t1, [C.did]) == []


def test_an_unheld_contested_task_needs_a_decision_until_one_is_offered():
    from meshnode.domain.gmp.view import due_state

    def state(rule: str, offer_open: bool) -> str | None:
        return due_state(status="pending", assigned_to=(), due_at_ms=None, overdue_at_ms=None, liveness={},
                         offer_open=offer_open, forks=0, goal_status="active", rule=rule, now_ms=1)

    assert [state(r, False) for r in ("creator", "cogconsensus", "meshconsensus")] == [
        "unassigned", "needs_decision", "needs_decision"]
    assert {state(r, True) for r in ("creator", "cogconsensus", "meshconsensus")} == {"offer_open"}
