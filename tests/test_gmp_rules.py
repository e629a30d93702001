"""GMP admission (gmp.md section 4) and the view rules (sections 4.3, 5, 8), one rule per test.

Each refusal is a forged update built on a real signed lineage (tests/gmp_fixtures.Story), and
most tests also admit the honest twin, so removing the rule makes the test fail."""

from __future__ import annotations

import pytest

from meshnode.base.container import ContainerError, build_container
from meshnode.domain.gmp import build, view
from meshnode.domain.gmp.rules import CODES, GmpRefused, MemoryHeld, admit, is_gmp
from gmp_fixtures import HOUR, A, B, C, M, Story, World, contested


def refused(w: World, c, code: str) -> None:
    out = w.put(c)
    assert (out.kind, out.code) == ("refused", code), out
    assert c.did not in w.held


def test_is_gmp_only_for_1_1():
    s = Story()
    assert is_gmp(s.g) and is_gmp(s.t1) and is_gmp(s.offer)
    old = build_container(A, "goal", {"title": "x"}, timestamp_ms=s.w.t)
    assert not is_gmp(old) and admit(old, s.w.held).kind == "admitted"


def test_refused_raises_typed_error():
    s = Story()
    out = admit(s.by(M, [s.t3], notes="mine now"), s.w.held)
    with pytest.raises(GmpRefused) as err:
        out.raise_if_refused()
    assert err.value.code == "gmp_not_authorized" and set(CODES) >= {err.value.code}


# --- gmp_not_authorized -------------------------------------------------------------------------------


def test_outsider_cannot_version_a_task():
    s = Story()
    refused(s.w, s.by(M, [s.t3], status="pending", assigned=[], reason="released"), "gmp_not_authorized")
    s.w.ok(s.by(B, [s.t3], status="pending", assigned=[], reason="released"))  # the holder may


def test_participant_cannot_version_a_task_it_does_not_hold():
    s = Story()
    refused(s.w, s.by(C, [s.t3], progress=0.9), "gmp_not_authorized")
    s.w.ok(s.by(B, [s.t3], progress=0.9))


def test_only_the_creator_versions_a_goal():
    s = Story()
    refused(s.w, s.w.goal(key=B, previous=[s.g], status="paused"), "gmp_not_authorized")
    s.w.ok(s.w.goal(previous=[s.g], status="paused"))


def test_first_task_by_outsider_refused_participant_citing_goal_admitted():
    s = Story()
    refused(s.w, s.w.task(s.g, key=M, see_also=[s.g]), "gmp_not_authorized")  # M is not in g's participants
    refused(s.w, s.w.task(s.g, key=C), "gmp_not_authorized")  # C cites nothing
    s.w.ok(s.w.task(s.g, key=C, see_also=[s.g]))


def test_subtask_by_the_parent_tasks_assignee():
    s = Story()
    refused(s.w, s.w.task(s.g, key=M, parent=s.lineage, see_also=[s.t3]), "gmp_not_authorized")
    sub = s.w.ok(s.w.task(s.g, key=B, parent=s.lineage, see_also=[s.t3], title="fixtures"))
    assert sub.related["in_reply_to"] == [s.g.did, s.lineage]


def test_former_assignee_cannot_merge_its_stale_fork():
    s = Story()
    removed = s.w.ok(s.by(A, [s.t3], status="pending", assigned=[], reason="reassigned_dead"))
    stale = s.w.ok(s.by(B, [s.t3], notes="still working"))  # concurrent: admitted against t3
    refused(s.w, s.by(B, [removed, stale], notes="merged"), "gmp_not_authorized")
    s.w.ok(s.by(A, [removed, stale], reason="merged"))


# --- gmp_bad_transition -------------------------------------------------------------------------------


def test_completed_cannot_go_back_to_in_progress():
    s = Story()
    done = s.w.ok(s.by(B, [s.t3], status="completed", reason="completed"))
    refused(s.w, s.by(B, [done], status="in_progress"), "gmp_bad_transition")
    s.w.ok(s.by(A, [done], status="pending", reason="reopened"))  # the creator may reopen


def test_completion_only_from_an_assignee():
    s = Story()
    refused(s.w, s.by(A, [s.t3], status="completed"), "gmp_bad_transition")
    s.w.ok(s.by(A, [s.t3], status="abandoned", reason="abandoned"))


def test_assignee_cannot_abandon():
    s = Story()
    refused(s.w, s.by(B, [s.t3], status="abandoned"), "gmp_bad_transition")


def test_assignee_releasing_must_drop_itself():
    s = Story()
    refused(s.w, s.by(B, [s.t3], status="pending"), "gmp_bad_transition")
    s.w.ok(s.by(B, [s.t3], status="pending", assigned=[], reason="released"))


def test_goal_transitions():
    s = Story()
    done = s.w.ok(s.w.goal(previous=[s.g], status="completed"))
    refused(s.w, s.w.goal(previous=[done], status="active"), "gmp_bad_transition")
    refused(s.w, s.w.goal(status="completed"), "gmp_bad_transition")  # a goal starts proposed or active


def test_first_task_version_starts_pending():
    s = Story()
    refused(s.w, s.w.task(s.g, status="completed"), "gmp_bad_transition")


def test_join_may_keep_a_parents_terminal_status():
    s = Story()
    done = s.w.ok(s.by(B, [s.t3], status="completed", reason="completed"))
    edit = s.w.ok(s.by(A, [s.t3], notes="creator's note"))
    s.w.ok(s.by(A, [done, edit], status="completed", reason="merged"))


# --- gmp_field_locked ---------------------------------------------------------------------------------


def test_assignee_cannot_edit_the_title():
    s = Story()
    refused(s.w, s.by(B, [s.t3], title="something easier"), "gmp_field_locked")
    s.w.ok(s.by(A, [s.t3], title="something easier"))


def test_assignee_cannot_add_someone():
    s = Story()
    refused(s.w, s.by(B, [s.t3], assigned=[B, C]), "gmp_field_locked")


def test_assignee_cannot_change_deadline_or_dependencies():
    s = Story()
    refused(s.w, s.by(B, [s.t3], deadline=s.w.t + 100 * HOUR), "gmp_field_locked")
    s.w.ok(s.by(B, [s.t3], next_check_at=s.w.t + 2 * HOUR, reason="check_in"))


# --- gmp_no_acceptance --------------------------------------------------------------------------------


def test_assignment_without_acceptance():
    s = Story()
    refused(s.w, s.by(A, [s.t3], assigned=[B, C]), "gmp_no_acceptance")


def test_assignment_with_someone_elses_acceptance():
    s = Story()
    refused(s.w, s.by(A, [s.t3], assigned=[B, C], agreed=[s.acc]), "gmp_no_acceptance")


def test_assignment_after_expiry():
    s = Story()
    o = s.w.ok(s.w.offer(s.lineage, s.t3, to=(C,), expires_ms=1000))
    s.w.tick(5000)
    late = s.w.ok(s.w.entry(C, "acceptance", s.lineage, offer=o.did))
    refused(s.w, s.by(A, [s.t3], assigned=[B, C], agreed=[late]), "gmp_no_acceptance")
    assert view.counts(late, s.w.held) == (False, "offer_expired")


def test_assignment_on_an_offer_by_a_non_delegator():
    s = Story()
    o = s.w.ok(s.w.offer(s.lineage, s.t3, to=(C,), key=M))
    acc = s.w.ok(s.w.entry(C, "acceptance", s.lineage, offer=o.did))
    refused(s.w, s.by(A, [s.t3], assigned=[B, C], agreed=[acc]), "gmp_no_acceptance")
    good = s.w.ok(s.w.offer(s.lineage, s.t3, to=(C,)))
    acc2 = s.w.ok(s.w.entry(C, "acceptance", s.lineage, offer=good.did))
    s.w.ok(s.by(A, [s.t3], assigned=[B, C], agreed=[acc2]))


def test_assignment_on_an_offer_of_another_lineage():
    s = Story()
    other = s.w.ok(s.w.task(s.g, title="other"))
    o = s.w.ok(s.w.offer(other.did, other, to=(C,)))
    acc = s.w.ok(s.w.entry(C, "acceptance", other.did, offer=o.did))
    refused(s.w, s.by(A, [s.t3], assigned=[B, C], agreed=[acc]), "gmp_no_acceptance")


def test_first_version_assigns_only_its_signer():
    s = Story()
    refused(s.w, s.w.task(s.g, assigned=[B]), "gmp_no_acceptance")
    s.w.ok(s.w.task(s.g, assigned=[A], status="in_progress"))


def test_creator_adds_itself_without_acceptance():
    s = Story()
    s.w.ok(s.by(A, [s.t3], assigned=[B, A]))


# --- gmp_against_decision -----------------------------------------------------------------------------


def _contested_story():
    s = Story()
    t = s.w.ok(s.w.task(s.g, fields={"delegation_rule": "cogconsensus"}, title="contested"))
    return s, t


def test_cogconsensus_assignment_needs_an_approved_basis():
    s, t = _contested_story()
    w = s.w
    nom, votes, result = contested(w, s.g, t.did, t, C)
    bare = w.ok(w.offer(t.did, t, to=(C,), selection="cogconsensus"))
    acc = w.ok(w.entry(C, "acceptance", t.did, offer=bare.did))
    v = build.task(A, {"title": "contested", "status": "pending", "delegation_rule": "cogconsensus",
                       "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                   now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did])
    refused(w, v, "gmp_against_decision")
    based = w.ok(w.offer(t.did, t, to=(C,), selection="cogconsensus", basis=result.did))
    acc2 = w.ok(w.entry(C, "acceptance", t.did, offer=based.did))
    w.ok(build.task(A, {"title": "contested", "status": "pending", "delegation_rule": "cogconsensus",
                        "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                    now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc2.did]))
    assert view.counts(nom, w.held) == (True, None)


def test_cogconsensus_basis_for_someone_else_or_rejected():
    s, t = _contested_story()
    w = s.w
    _, _, for_b = contested(w, s.g, t.did, t, B)
    _, _, rejected = contested(w, s.g, t.did, t, C, approve=False)
    assert rejected.payload["state"] == "rejected"
    for basis in (for_b, rejected):
        o = w.ok(w.offer(t.did, t, to=(C,), selection="cogconsensus", basis=basis.did))
        acc = w.ok(w.entry(C, "acceptance", t.did, offer=o.did))
        refused(w, build.task(A, {"title": "contested", "status": "pending", "delegation_rule": "cogconsensus",
                                  "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                              now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did]),
                "gmp_against_decision")


def test_cogconsensus_basis_pending_until_votes_arrive():
    s, t = _contested_story()
    w = s.w
    nom, votes, result = contested(w, s.g, t.did, t, C)
    o = w.ok(w.offer(t.did, t, to=(C,), selection="cogconsensus", basis=result.did))
    acc = w.ok(w.entry(C, "acceptance", t.did, offer=o.did))
    v = build.task(A, {"title": "contested", "status": "pending", "delegation_rule": "cogconsensus",
                       "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                   now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did])
    held = MemoryHeld(c for c in w.held.all() if c.did != votes[0].did)
    out = admit(v, held)
    assert out.kind == "pending" and out.missing == (votes[0].did,)
    assert admit(v, w.held).kind == "admitted"


def test_meshconsensus_assignment_follows_the_first_decision_for_the_version():
    """gmp.md 6.3 step 3: the offer cites {committee, height}; admission waits until that height is
    decided here, then admits only the nominee of the first gmp_delegation value for (task, version)."""
    from meshnode.domain.gmp.contest import delegation_value
    from meshnode.domain.gmp.rules import commit_marker

    s = Story()
    w = s.w
    t = w.ok(w.task(s.g, fields={"delegation_rule": "meshconsensus"}, title="committee"))

    def nominate(who):
        return w.ok(build.entry(C, "delegation", {"task_version": t.did, "candidates": [who.did], "nomination": True,
                                                  "selection": "meshconsensus", "expires_at": w.t + HOUR},
                                now_ms=w.tick(), about=t.did, see_also=[s.g.did]))

    for_c, for_b = nominate(C), nominate(B)
    first, later = delegation_value(t.did, t.did, for_c.did), delegation_value(t.did, t.did, for_b.did)

    def assign(who, height):
        o = w.ok(w.offer(t.did, t, to=(who,), selection="meshconsensus", basis={"committee": "c1", "height": height}))
        acc = w.ok(w.entry(who, "acceptance", t.did, offer=o.did))
        return build.task(A, {"title": "committee", "status": "pending", "delegation_rule": "meshconsensus",
                              "assigned_to": [who.did], "next_check_at": w.t + HOUR},
                          now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did])

    to_c, to_b, to_b_at_1 = assign(C, 1), assign(B, 2), assign(B, 1)
    held = MemoryHeld(w.held.all(), decisions=[("c1", b"other")])
    assert admit(to_c, held).missing == (commit_marker(1),)  # height 1 not decided here yet: pending
    held.decisions += [("c1", first), ("c1", later)]
    assert admit(to_c, held).kind == "admitted"
    out = admit(to_b, held)  # the later value for the same version is void
    assert (out.kind, out.code) == ("refused", "gmp_against_decision"), out
    out = admit(to_b_at_1, held)  # the binding decision names C, not B
    assert (out.kind, out.code) == ("refused", "gmp_against_decision"), out


def test_meshconsensus_assignments_refused_without_a_committee():
    s = Story()
    w = s.w
    t = w.ok(w.task(s.g, fields={"delegation_rule": "meshconsensus"}, title="committee"))
    o = w.ok(w.offer(t.did, t, to=(C,), selection="meshconsensus", basis={"committee": "c1", "height": 4}))
    acc = w.ok(w.entry(C, "acceptance", t.did, offer=o.did))
    refused(w, build.task(A, {"title": "committee", "status": "pending", "delegation_rule": "meshconsensus",
                              "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                          now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did]),
            "gmp_against_decision")


# --- gmp_link_changed, gmp_cross_lineage, gmp_bad_creator, gmp_bad_related ---------------------------


def test_in_reply_to_is_fixed():
    s = Story()
    other = s.w.ok(s.w.task(s.g, title="other"))
    v = build.task(A, {"title": "build adapter", "status": "in_progress", "assigned_to": [B.did],
                       "next_check_at": s.check_ms}, now_ms=s.w.tick(), goal=s.g.did, parent_task=other.did,
                   previous=[s.t3.did])
    refused(s.w, v, "gmp_link_changed")


def test_parent_from_another_lineage():
    s = Story()
    other = s.w.ok(s.w.task(s.g, title="other"))
    refused(s.w, s.by(A, [s.t3, other], reason="merged"), "gmp_cross_lineage")
    refused(s.w, s.w.task(s.g, previous=[s.g]), "gmp_cross_lineage")  # a goal is no task parent


def test_task_must_name_a_goal_lineage_id():
    s = Story()
    g2 = s.w.ok(s.w.goal(previous=[s.g]))
    refused(s.w, s.w.task(g2), "gmp_cross_lineage")  # a later goal version, not the lineage id
    refused(s.w, build.task(A, {"title": "x", "status": "pending"}, now_ms=s.w.tick(), goal=s.lineage),
            "gmp_cross_lineage")


def test_entry_about_a_goal_is_one_of_the_goal_kinds():
    s = Story()
    s.w.ok(s.w.entry(B, "reflection", s.g.did, summary="hard goal"))
    refused(s.w, s.w.entry(B, "acceptance", s.g.did, offer=s.offer.did), "gmp_cross_lineage")


def test_goal_creator_field():
    s = Story()
    refused(s.w, s.w.goal(creator=B.did), "gmp_bad_creator")
    refused(s.w, s.w.goal(previous=[s.g], creator=B.did), "gmp_bad_creator")
    s.w.ok(s.w.goal(previous=[s.g], creator=A.did))


def test_related_shapes():
    s = Story()
    w = s.w
    three = build_container(A, "task", {"title": "x", "status": "pending"}, class_version="1.1",
                            timestamp_ms=w.tick(), related={"in_reply_to": [s.g.did, s.lineage, s.t3.did]})
    refused(w, three, "gmp_bad_related")
    no_goal = build_container(A, "task", {"title": "x", "status": "pending"}, class_version="1.1",
                              timestamp_ms=w.tick())
    refused(w, no_goal, "gmp_bad_related")
    refused(w, w.entry(A, "rollback", s.lineage), "gmp_bad_related")
    two = build_container(B, "workflow_entry", {"entry_type": "reflection"}, class_version="1.1",
                          timestamp_ms=w.tick(), related={"in_reply_to": [s.lineage, s.g.did]})
    refused(w, two, "gmp_bad_related")


# --- stewards (section 8) -----------------------------------------------------------------------------


def _overdue_at(s: Story) -> int:
    return view.task_state(s.t3).overdue_at_ms


def test_steward_takeover_at_overdue_but_not_a_millisecond_before():
    s = Story()
    w = s.w
    w.t = _overdue_at(s) - 1001  # the next tick (1 s) signs at overdue_at - 1 ms
    refused(w, s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g]),
            "gmp_takeover_early")
    w.t = _overdue_at(s) - 1000
    took = w.ok(s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g]))
    assert took.timestamp_ms == _overdue_at(s)
    # the steward is now a delegator: its offer counts and its assignment is admitted
    o = w.ok(w.offer(s.lineage, took, to=(M,), key=C))
    assert view.counts(o, w.held) == (True, None)
    acc = w.ok(w.entry(M, "acceptance", s.lineage, offer=o.did))
    w.ok(s.by(C, [took], assigned=[M], agreed=[acc], next_check_at=w.t + HOUR, reason="assigned"))


def test_steward_needs_a_goal_version_listing_it():
    s = Story()
    s.w.t = _overdue_at(s)
    refused(s.w, s.by(M, [s.t3], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g]),
            "gmp_not_authorized")
    refused(s.w, s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue"),
            "gmp_not_authorized")


def test_takeover_changes_nothing_else():
    s = Story()
    s.w.t = _overdue_at(s)
    refused(s.w, s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g],
                      title="mine"), "gmp_field_locked")
    refused(s.w, s.by(C, [s.t3], status="pending", assigned=[C], reason="reassigned_overdue", see_also=[s.g]),
            "gmp_field_locked")


# --- pending --------------------------------------------------------------------------------------------


def test_pending_names_the_missing_parent_then_admits():
    s = Story()
    held = MemoryHeld(c for c in s.w.held.all() if c.did != s.t2.did)
    out = admit(s.t3, held)
    assert out.kind == "pending" and out.missing == (s.t2.did,)
    held.add(s.t2)
    assert admit(s.t3, held).kind == "admitted"


def test_entries_pending_on_what_counting_reads():
    s = Story()
    held = MemoryHeld(c for c in s.w.held.all() if c.did != s.offer.did)
    assert admit(s.acc, held).missing == (s.offer.did,)
    held = MemoryHeld(c for c in s.w.held.all() if c.did != s.lineage)
    assert admit(s.offer, held).missing == (s.lineage,)


# --- class schema (step 7) ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,payload", [
    ("goal", {"title": "x", "status": "done"}),
    ("goal", {"title": "x", "status": "active", "participants": [B.did, B.did]}),
    ("task", {"title": "x", "status": "in_progress", "assigned_to": [B.did]}),
    ("task", {"title": "x", "status": "pending", "assigned_to": [f"did:key:z{i}" for i in range(65)],
              "next_check_at": "2026-06-01T09:00:00.000Z"}),
    ("task", {"title": "x", "status": "pending", "check_grace_s": 60}),
    ("workflow_entry", {"entry_type": "vote"}),
    ("workflow_entry", {"entry_type": "acceptance"}),
    ("workflow_entry", {"entry_type": "delegation", "task_version": B.did, "candidates": [B.did, C.did],
                        "selection": "direct", "expires_at": "2026-06-01T09:00:00.000Z", "nomination": True}),
])
def test_class_schema_rules(cls, payload):
    with pytest.raises(ContainerError) as err:
        build_container(A, cls, payload, class_version="1.1", timestamp_ms=0)
    assert err.value.code == "class_schema"


def test_held_task_in_terminal_status_needs_no_check():
    build_container(A, "task", {"title": "x", "status": "completed", "assigned_to": [B.did]},
                    class_version="1.1", timestamp_ms=0)
    build_container(A, "workflow_entry", {"entry_type": "x-metrics", "details": {"n": 1}}, class_version="1.1",
                    timestamp_ms=0)


def test_unreadable_payload_refused():
    s = Story()
    c = build_container(A, "task", b"\x00opaque", class_version="1.1", payload_type="binary", timestamp_ms=s.w.tick(),
                        related={"in_reply_to": [s.g.did]})
    refused(s.w, c, "gmp_unreadable")


def test_next_version_builders_keep_links_and_apply_changes():
    s = Story()
    w = s.w
    sub = w.ok(w.task(s.g, key=B, parent=s.lineage, see_also=[s.t3], title="fixtures"))
    v = w.ok(build.next_task(B, [sub], now_ms=w.tick(), changes={"notes": "n", "status": "paused"}))
    assert v.related["in_reply_to"] == [s.g.did, s.lineage] and v.related["previous_version"] == [sub.did]
    assert v.payload["notes"] == "n" and v.payload["title"] == "fixtures"
    g2 = w.ok(build.next_goal(A, [s.g], now_ms=w.tick(), changes={"status": "paused", "participants": None}))
    assert "participants" not in g2.payload and g2.related["previous_version"] == [s.g.did]
