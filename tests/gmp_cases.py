"""The cases of protocols/vectors/gmp.json (gmp.md section 12), built on tests/gmp_fixtures."""

from __future__ import annotations

from gmp_fixtures import HOUR, A, B, C, M, Story, World, contested
from meshnode.base.container import build_container, schema
from meshnode.domain.gmp import build, view


def unchecked(key, cls: str, payload: dict, ts: int, related=None):
    """Sign without the class check (to make step-7 refusals); the bytes are otherwise exact."""
    rules = schema._REGISTRY.pop((cls, "1.1"))
    try:
        return build_container(key, cls, payload, class_version="1.1", timestamp_ms=ts, related=related)
    finally:
        schema._REGISTRY[(cls, "1.1")] = rules


class Case:
    def __init__(self, description: str, s: Story | None = None, story: bool = True):
        self.description = description
        self.s = s or (Story() if story else None)
        self.w = self.s.w if self.s else World()
        self.items: list[tuple[str, object, str]] = []  # (name, container, expected outcome now)
        self.extra: dict = {}
        if self.s:
            for name in ("g", "t1", "offer", "receipt", "acc", "t2", "t3"):
                self.items.append((name, getattr(self.s, name), "admitted"))

    def add(self, name: str, c, expect: str = "admitted"):
        out = self.w.put(c) if expect != "class_schema" else None
        got = "class_schema" if out is None else out.kind if out.kind != "refused" else out.code
        assert got == expect, (self.description, name, out)
        self.items.append((name, c, expect))
        return c


class Case:
    """Containers in arrival order with the outcome each must get then; made on a Story by default."""

    def __init__(self, description: str, story: bool = True):
        self.description = description
        self.s = Story() if story else None
        self.w = self.s.w if self.s else World()
        self.items: list[tuple[str, object, str]] = []  # (name, container, expected outcome on arrival)
        if self.s:
            for name in ("g", "t1", "offer", "receipt", "acc", "t2", "t3"):
                self.items.append((name, getattr(self.s, name), "admitted"))

    def add(self, name: str, c, expect: str = "admitted"):
        if expect != "class_schema":
            out = self.w.put(c)
            got = out.kind if out.kind != "refused" else out.code
            assert got == expect, (self.description, name, out)
        self.items.append((name, c, expect))
        return c


def minimal():
    k = Case("minimal goal, task and entry", story=False)
    w = k.w
    g = k.add("goal", build.goal(A, {"title": "g", "status": "proposed"}, now_ms=w.tick()))
    t = k.add("task", build.task(A, {"title": "t", "status": "pending"}, now_ms=w.tick(), goal=g.did))
    k.add("entry", build.entry(A, "reflection", {}, now_ms=w.tick(), about=t.did))
    return k, t.did, None


def full():
    k = Case("full goal, subgoal, subtask and every entry kind", story=False)
    w = k.w
    g = k.add("goal", build.goal(A, {
        "title": "Ship the bridge", "status": "active", "description": "a bridge between two meshes",
        "priority": 0.75, "success_criteria": ["both sides exchange notes"], "constraints": ["no new daemons"],
        "expected_outcome": "notes cross", "ethical_context": "no personal data", "participants": [B.did, C.did],
        "audience": "public", "creator": A.did}, now_ms=w.tick(), tags=["bridge", "mesh"]))
    other = k.add("other_goal", build.goal(A, {"title": "Docs", "status": "proposed"}, now_ms=w.tick()))
    sub = k.add("subgoal", build.goal(A, {"title": "Adapter", "status": "active"}, now_ms=w.tick(),
                                      parent_goal=g.did, depends_on=[other.did], see_also=[other.did]))
    parent = k.add("parent_task", build.task(A, {"title": "build adapter", "status": "pending"}, now_ms=w.tick(),
                                             goal=sub.did))
    t = k.add("subtask", build.task(A, {
        "title": "fixtures", "status": "in_progress", "description": "recorded exchanges", "assigned_to": [A.did],
        "progress": 0.1, "priority": 0.6, "deadline": w.t + 48 * HOUR, "next_check_at": w.t + 24 * HOUR,
        "check_grace_s": 7200, "delegation_rule": "creator", "reason": "created", "metrics": {"files": 3},
        "notes": "start with the note class"}, now_ms=w.tick(), goal=sub.did, parent_task=parent.did,
        depends_on=[parent.did], tags=["fixtures"]))
    o = k.add("delegation", build.entry(A, "delegation", {"task_version": t.did, "candidates": [B.did, C.did],
                                                          "selection": "interest", "expires_at": w.t + HOUR},
                                        now_ms=w.tick(), about=t.did, summary="who wants it",
                                        recipients=[B.did, C.did]))
    k.add("receipt", build.entry(B, "receipt", {"received": o.did, "received_at": w.t}, now_ms=w.tick(), about=t.did))
    k.add("refusal", build.entry(B, "refusal", {"offer": o.did, "reason": "busy"}, now_ms=w.tick(), about=t.did))
    k.add("progress", build.entry(A, "progress", {"progress": 0.3, "task_version": t.did}, now_ms=w.tick(),
                                  about=t.did))
    log = k.add("execution_log", build.entry(A, "execution_log", {"task_version": t.did}, now_ms=w.tick(),
                                             about=t.did, summary="recorded 3 exchanges"))
    k.add("blocker", build.entry(A, "blocker", {"blocking": [parent.did], "resolved": False, "task_version": t.did},
                                 now_ms=w.tick(), about=t.did))
    k.add("rollback", build.entry(A, "rollback", {}, now_ms=w.tick(), about=t.did, contradicts=[log.did]))
    k.add("ethical_result", build.entry(C, "ethical_result", {"details": {"objection": None}}, now_ms=w.tick(),
                                        about=g.did, summary="fine"))
    k.add("extension", build.entry(B, "x-metrics", {"details": {"cpu_s": 12}}, now_ms=w.tick(), about=t.did))
    return k, t.did, None


def lifecycle():
    k = Case("the whole lifecycle: goal, task, offer, receipt, acceptance, assigned, in_progress, progress, "
             "check-in, completed")
    s, w = k.s, k.w
    k.add("progress", w.entry(B, "progress", s.lineage, progress=0.4, task_version=s.t3.did))
    k.add("receipt_t2", w.entry(B, "receipt", s.lineage, received=s.t2.did, received_at=w.t))
    t4 = k.add("check_in", s.by(B, [s.t3], next_check_at=w.t + 2 * HOUR, reason="check_in", progress=0.5))
    k.add("completed", s.by(B, [t4], status="completed", reason="completed", progress=1.0))
    return k, s.lineage, None


def holder_dead():
    k = Case("a held task whose holder is dead by liveness: due state holder_dead")
    return k, k.s.lineage, {"B": "dead"}


def refusal_and_reoffer():
    k = Case("refusal and re-offer")
    s, w = k.s, k.w
    t = k.add("task2", w.task(s.g, title="write spec"))
    o1 = k.add("offer_b", w.offer(t.did, t, to=(B,)))
    k.add("refusal_b", w.entry(B, "refusal", t.did, offer=o1.did, reason="busy"))
    o2 = k.add("offer_c", w.offer(t.did, t, to=(C,)))
    acc = k.add("acceptance_c", w.entry(C, "acceptance", t.did, offer=o2.did))
    k.add("assigned_c", w.task(s.g, previous=[t], assigned=[C], agreed=[acc], title="write spec"))
    return k, t.did, None


def two_acceptances():
    k = Case("an offer to two candidates, both accept: the earliest acceptance is assigned")
    s, w = k.s, k.w
    t = k.add("task2", w.task(s.g, title="load test"))
    o = k.add("offer_bc", w.offer(t.did, t, to=(B, C)))
    first = k.add("acceptance_c", w.entry(C, "acceptance", t.did, offer=o.did))
    k.add("acceptance_b", w.entry(B, "acceptance", t.did, offer=o.did))
    k.add("assigned_c", w.task(s.g, previous=[t], assigned=[C], agreed=[first], title="load test"))
    return k, t.did, None


def dead_reassigned():
    k = Case("a dead assignee reassigned by the creator, then offered to C")
    s, w = k.s, k.w
    gone = k.add("reassigned_dead", s.by(A, [s.t3], status="pending", assigned=[], reason="reassigned_dead"))
    o = k.add("offer_c", w.offer(s.lineage, gone, to=(C,)))
    acc = k.add("acceptance_c", w.entry(C, "acceptance", s.lineage, offer=o.did))
    k.add("assigned_c", s.by(A, [gone], assigned=[C], agreed=[acc], reason="assigned", next_check_at=w.t + HOUR))
    return k, s.lineage, {"B": "dead", "C": "ok"}


def _overdue(s) -> int:
    return view.task_state(s.t3).overdue_at_ms


def steward_takeover():
    k = Case("a steward's takeover at exactly overdue_at (one millisecond earlier is refused)")
    s, w = k.s, k.w
    w.t = _overdue(s) - 1001
    k.add("takeover_early", s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue",
                                 see_also=[s.g]), "gmp_takeover_early")
    w.t = _overdue(s) - 1000
    took = k.add("takeover", s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue",
                                  see_also=[s.g]))
    o = k.add("offer_by_steward", w.offer(s.lineage, took, to=(M,), key=C))
    acc = k.add("acceptance_m", w.entry(M, "acceptance", s.lineage, offer=o.did))
    k.add("assigned_m", s.by(C, [took], assigned=[M], agreed=[acc], reason="assigned", next_check_at=w.t + HOUR))
    return k, s.lineage, {"B": "dead"}


def racing_stewards():
    k = Case("two racing stewards make a fork; the creator joins it")
    s, w = k.s, k.w
    g2 = k.add("goal_with_m", w.goal(previous=[s.g], participants=(B, C, M)))
    w.t = _overdue(s) + 1000
    c_took = k.add("takeover_c", s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue",
                                      see_also=[s.g]))
    k.add("takeover_m", s.by(M, [s.t3], status="pending", assigned=[], reason="reassigned_overdue",
                             see_also=[g2]))
    heads = view.heads_of(w.held.all_versions(s.lineage))
    assert len(heads) == 2
    k.add("join", s.by(A, sorted(heads, key=lambda h: h.did != c_took.did), reason="merged"))
    return k, s.lineage, None


def fork_completion_kept():
    k = Case("the creator reassigns while the holder completes: a fork, shown as the creator's head, "
             "then the creator's join keeps the completion")
    s, w = k.s, k.w
    removed = k.add("reassigned_dead", s.by(A, [s.t3], status="pending", assigned=[], reason="reassigned_dead"))
    done = k.add("completed", s.by(B, [s.t3], status="completed", reason="completed", progress=1.0))
    k.add("join", s.by(A, [removed, done], status="completed", assigned=[B], reason="merged", progress=1.0))
    k.add("rollback", w.entry(A, "rollback", s.lineage, contradicts=[removed.did], summary="B had finished"))
    return k, s.lineage, None


def fork_open():
    k = Case("an open fork: creator edit and holder check-in; the creator's head is shown")
    s, w = k.s, k.w
    k.add("holder_check_in", s.by(B, [s.t3], next_check_at=w.t + 3 * HOUR, reason="check_in"))
    k.add("creator_edit", s.by(A, [s.t3], notes="use the staging mesh"))
    return k, s.lineage, None


def contested_delegation():
    k = Case("contested delegation: nomination, votes, an approved consensus_result, the offer citing it")
    s, w = k.s, k.w
    t = k.add("contested_task", w.task(s.g, fields={"delegation_rule": "cogconsensus"}, title="pick a reviewer"))
    before = set(w.held.all())
    nom, votes, result = contested(w, s.g, t.did, t, C)
    k.items.append(("nomination", nom, "admitted"))
    for i, v in enumerate(votes):
        k.items.append((f"vote_{'abc'[i]}", v, "admitted"))
    k.items.append(("result", result, "admitted"))
    assert {nom, result, *votes} <= set(w.held.all()) - before
    bare = k.add("offer_without_basis", w.offer(t.did, t, to=(C,), selection="cogconsensus"))
    bare_acc = k.add("acceptance_bare", w.entry(C, "acceptance", t.did, offer=bare.did))
    payload = {"title": "pick a reviewer", "status": "pending", "delegation_rule": "cogconsensus",
               "assigned_to": [C.did], "next_check_at": w.t + HOUR}
    k.add("assigned_without_basis", build.task(A, payload, now_ms=w.tick(), goal=s.g.did, previous=[t.did],
                                               agreed=[bare_acc.did]), "gmp_against_decision")
    o = k.add("offer_with_basis", w.offer(t.did, t, to=(C,), selection="cogconsensus", basis=result.did))
    acc = k.add("acceptance_c", w.entry(C, "acceptance", t.did, offer=o.did))
    k.add("assigned_c", build.task(A, payload, now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did]))
    return k, t.did, None


def arrival_orders():
    """The lifecycle in three orders: causal, reversed (a pending chain), and interleaved. Outcomes on
    arrival are recorded as they come (None: not asserted here); every container ends admitted."""
    base, lineage, _ = lifecycle()
    out = [(base, lineage, None)]
    for label, order in (("reversed", base.items[::-1]), ("interleaved", base.items[1::2] + base.items[0::2])):
        k = Case(f"the lifecycle arriving {label}: pending until the named containers arrive, same view",
                 story=False)
        k.items = [(name, c, None) for name, c, _ in order]
        k.w.t = base.w.t
        out.append((k, lineage, None))
    return out


def refusals():
    k = Case("one fault each, on the lifecycle: every refusal code; only the honest steps (B completes) "
             "change the view")
    s, w = k.s, k.w
    other = k.add("other_task", w.task(s.g, title="other"))
    k.add("outsider_version", s.by(M, [s.t3], status="abandoned"), "gmp_not_authorized")
    c_task = k.add("c_task", w.task(s.g, key=C, see_also=[s.g], title="c's own", assigned=[C],
                                    status="in_progress"))
    k.add("b_completes_c_task", build.task(B, {"title": "c's own", "status": "completed", "assigned_to": [C.did]},
                                           now_ms=w.tick(), goal=s.g.did, previous=[c_task.did]),
          "gmp_not_authorized")
    done = k.add("completed", s.by(B, [s.t3], status="completed", reason="completed"))
    k.add("completed_to_in_progress", s.by(B, [done], status="in_progress"), "gmp_bad_transition")
    k.add("b_edits_title", s.by(B, [s.t3], title="something easier"), "gmp_field_locked")
    k.add("assigned_without_acceptance", s.by(A, [s.t3], assigned=[B, C]), "gmp_no_acceptance")
    k.add("assigned_with_b_acceptance_for_c", s.by(A, [s.t3], assigned=[B, C], agreed=[s.acc]), "gmp_no_acceptance")
    o = k.add("short_offer_c", w.offer(s.lineage, s.t3, to=(C,), expires_ms=1000))
    w.tick(5000)
    late = k.add("late_acceptance_c", w.entry(C, "acceptance", s.lineage, offer=o.did))
    k.add("assigned_after_expiry", s.by(A, [s.t3], assigned=[B, C], agreed=[late]), "gmp_no_acceptance")
    k.add("in_reply_to_changed", build.task(A, {"title": "build adapter", "status": "in_progress",
                                                "assigned_to": [B.did], "next_check_at": w.t + HOUR},
                                            now_ms=w.tick(), goal=s.g.did, parent_task=other.did,
                                            previous=[s.t3.did]), "gmp_link_changed")
    k.add("parent_of_another_lineage", s.by(A, [s.t3, other], reason="merged"), "gmp_cross_lineage")
    k.add("wrong_goal_creator", w.goal(previous=[s.g], creator=B.did), "gmp_bad_creator")
    w.t = _overdue(s) - 1001
    k.add("takeover_1ms_early", s.by(C, [s.t3], status="pending", assigned=[], reason="reassigned_overdue",
                                     see_also=[s.g]), "gmp_takeover_early")
    k.add("three_in_reply_to", build_container(A, "task", {"title": "x", "status": "pending"}, class_version="1.1",
                                               timestamp_ms=w.tick(),
                                               related={"in_reply_to": [s.g.did, s.lineage, other.did]}),
          "gmp_bad_related")
    k.add("binary_payload", build_container(A, "task", b"\x00opaque", class_version="1.1", payload_type="binary",
                                            timestamp_ms=w.tick(), related={"in_reply_to": [s.g.did]}),
          "gmp_unreadable")
    return k, s.lineage, None


def against_decision():
    k = Case("an assignment under meshconsensus whose offer cites no {committee, height} decision")
    s, w = k.s, k.w
    t = k.add("committee_task", w.task(s.g, fields={"delegation_rule": "meshconsensus"}, title="committee"))
    o = k.add("offer", w.offer(t.did, t, to=(C,), selection="meshconsensus", basis=t.did))
    acc = k.add("acceptance_c", w.entry(C, "acceptance", t.did, offer=o.did))
    k.add("assigned_c", build.task(A, {"title": "committee", "status": "pending", "delegation_rule": "meshconsensus",
                                       "assigned_to": [C.did], "next_check_at": w.t + HOUR},
                                   now_ms=w.tick(), goal=s.g.did, previous=[t.did], agreed=[acc.did]),
          "gmp_against_decision")
    return k, t.did, None


def class_schema_faults():
    k = Case("step 7 (class_schema): each container breaks one payload rule", story=False)
    w = k.w
    g = k.add("goal", w.goal())
    for name, cls, payload in (
            ("bad_status", "goal", {"title": "x", "status": "done"}),
            ("duplicate_participant", "goal", {"title": "x", "status": "active", "participants": [B.did, B.did]}),
            ("held_without_next_check", "task", {"title": "x", "status": "in_progress", "assigned_to": [B.did]}),
            ("65_assignees", "task", {"title": "x", "status": "pending", "next_check_at": "2026-06-02T00:00:00.000Z",
                                      "assigned_to": [f"did:key:z6Mk{i:04d}" for i in range(65)]}),
            ("unknown_entry_kind", "workflow_entry", {"entry_type": "vote"})):
        related = {"in_reply_to": [g.did]}
        k.add(name, unchecked(A, cls, payload, w.tick(), related if cls != "goal" else None), "class_schema")
    return k, None, None


def counting():
    k = Case("counting: admitted entries that do not count, with the reason")
    s, w = k.s, k.w
    k.add("progress_by_c", w.entry(C, "progress", s.lineage, progress=0.9, task_version=s.t3.did))
    k.add("progress_before_assigned", w.entry(B, "progress", s.lineage, progress=0.1, task_version=s.t1.did))
    k.add("log_without_version", w.entry(B, "execution_log", s.lineage, summary="did things"))
    k.add("receipt_for_b_by_c", w.entry(C, "receipt", s.lineage, received=s.offer.did, received_at=w.t))
    nom = k.add("nomination_by_a", w.entry(A, "delegation", s.lineage, task_version=s.t3.did, candidates=[C.did],
                                           selection="cogconsensus", expires_at=w.t + HOUR, nomination=True))
    k.add("acceptance_of_nomination", w.entry(C, "acceptance", s.lineage, offer=nom.did))
    k.add("offer_by_b", w.offer(s.lineage, s.t3, to=(C,), key=B))
    k.add("rollback_by_c", w.entry(C, "rollback", s.lineage, contradicts=[s.acc.did]))
    k.add("acceptance_by_c_of_offer_to_b", w.entry(C, "acceptance", s.lineage, offer=s.offer.did))
    k.add("nomination_by_m", w.entry(M, "delegation", s.lineage, task_version=s.t3.did, candidates=[M.did],
                                     selection="cogconsensus", expires_at=w.t + HOUR, nomination=True))
    k.add("acceptance_of_a_task_version", w.entry(B, "acceptance", s.lineage, offer=s.t2.did))
    return k, s.lineage, None


def all_cases():
    return [minimal(), full(), lifecycle(), holder_dead(), refusal_and_reoffer(), two_acceptances(),
            dead_reassigned(), steward_takeover(), racing_stewards(), fork_completion_kept(), fork_open(),
            contested_delegation(), *arrival_orders()[1:], refusals(), against_decision(), class_schema_faults(),
            counting()]
