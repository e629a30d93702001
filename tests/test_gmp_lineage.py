"""Hypothesis over the GMP lineage rules (issue 14 item 8): random histories of one task, with
forged versions and entries mixed in, reach the same admitted set, the same shown head, task state,
holders and counted entries in every arrival order; forged containers never change the view."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gmp_fixtures import HOUR, A, B, C, M, Story, World
from meshnode.base.container import parse_ms
from meshnode.domain.gmp import view
from meshnode.domain.gmp.rules import MemoryHeld, admit

PEOPLE = (B, C)


def deliver(containers) -> tuple[MemoryHeld, dict[str, str]]:
    """Admit ``containers`` in the given order with a small pending queue (re-run when what a pending
    container misses arrives). Returns the held set and each container's final outcome."""
    held = MemoryHeld()
    outcome: dict[str, str] = {}
    waiting: dict[str, list] = {}

    def run(c) -> None:
        out = admit(c, held)
        if out.kind == "pending":
            outcome[c.did] = "pending"
            waiting.setdefault(out.missing[0], []).append(c)
            return
        outcome[c.did] = out.kind if out.kind == "admitted" else out.code
        if out.kind == "admitted":
            held.add(c)
            for again in waiting.pop(c.did, []):
                run(again)

    for c in containers:
        run(c)
    return held, outcome


def the_view(held: MemoryHeld, lineage: str) -> dict:
    versions = held.all_versions(lineage)
    heads = view.heads_of(versions)
    creator = held.get(lineage).sender_did
    head = view.shown_head(heads, creator)
    entries = sorted((c.did, view.counts(c, held)) for c in held.all() if c.cls == "workflow_entry")
    spans = view.holder_spans(view.path_to(head, held))
    return {"head": head.did, "forks": len(heads) - 1, "state": view.task_state(head), "entries": entries,
            "holders": spans}


def _head(s: Story, data) -> object:
    """A head, or now and then one of the last versions (a concurrent update: a fork)."""
    versions = sorted(s.w.held.all_versions(s.lineage), key=lambda v: (v.timestamp_ms, v.did))
    heads = sorted(view.heads_of(versions), key=lambda h: h.did)
    return data.draw(st.sampled_from(heads + versions[-3:]))


def grow(s: Story, data, steps: int) -> list:
    """Random honest and forged steps on the story's task; returns every container made (in order)."""
    w, made = s.w, []

    def emit(c):
        made.append(c)
        w.put(c)  # the reference world, in causal order (refusals simply stay out)
        return c

    for _ in range(steps):
        w.tick(data.draw(st.integers(1, 40)) * 60_000)
        h = _head(s, data)
        held_by = [k for k in (A, B, C) if k.did in h.payload.get("assigned_to", ())]
        action = data.draw(st.sampled_from(["edit", "offer", "assignee", "unassign", "forge", "join", "entry",
                                            "takeover"]))
        if action == "edit":
            emit(s.by(A, [h], notes=f"edit {w.t}"))
        elif action == "offer":
            x = data.draw(st.sampled_from(PEOPLE))
            o = emit(w.offer(s.lineage, h, to=(x,), expires_ms=data.draw(st.sampled_from([60_000, HOUR]))))
            if data.draw(st.booleans()):
                w.tick(data.draw(st.sampled_from([1000, 2 * HOUR])))
                acc = emit(w.entry(x, "acceptance", s.lineage, offer=o.did))
                target = _head(s, data)
                mine = [k for k in PEOPLE if k.did in target.payload.get("assigned_to", ())]
                emit(s.by(A, [target], assigned=[*mine, x] if x not in mine else mine, agreed=[acc],
                          reason="assigned", next_check_at=w.t + HOUR))
        elif action == "assignee" and held_by:
            k = held_by[0]
            move = data.draw(st.sampled_from(["in_progress", "check_in", "completed", "released"]))
            if move == "released":
                emit(s.by(k, [h], status="pending", assigned=[x for x in held_by if x is not k],
                          reason="released"))
            elif move == "check_in":
                emit(s.by(k, [h], next_check_at=w.t + HOUR, reason="check_in"))
            else:
                emit(s.by(k, [h], status=move, reason="started" if move == "in_progress" else move))
        elif action == "unassign":
            emit(s.by(A, [h], status="pending", assigned=[], reason="reassigned_dead"))
        elif action == "forge":
            forger = data.draw(st.sampled_from([M, B, C]))
            kind = data.draw(st.sampled_from(["title", "complete", "assign_self", "abandon"]))
            if kind == "title":
                emit(s.by(forger, [h], title="forged"))
            elif kind == "complete":
                emit(s.by(forger, [h], status="completed"))
            elif kind == "assign_self":
                emit(s.by(forger, [h], assigned=[forger], next_check_at=w.t + HOUR))
            else:
                emit(s.by(forger, [h], status="abandoned"))
        elif action == "join":
            heads = view.heads_of(w.held.all_versions(s.lineage))
            if len(heads) > 1:
                best = view.shown_head(heads, A.did)
                emit(s.by(A, sorted(heads, key=lambda v: v.did != best.did), reason="merged"))
        elif action == "entry":
            k = data.draw(st.sampled_from([B, C, M]))
            emit(w.entry(k, "progress", s.lineage, progress=data.draw(st.sampled_from([0.2, 0.7])),
                         task_version=h.did))
        elif action == "takeover":
            due = view.task_state(h).overdue_at_ms
            if due is not None and C.did not in h.payload.get("assigned_to", ()):
                w.t = max(w.t, due + data.draw(st.sampled_from([-1, 0, 1])) - 1000)
                emit(s.by(C, [h], status="pending", assigned=[], reason="reassigned_overdue", see_also=[s.g]))
    return made


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_arrival_order_and_forgeries_do_not_change_the_view(data):
    s = Story(World())
    story = [s.g, s.t1, s.offer, s.receipt, s.acc, s.t2, s.t3]
    made = story + grow(s, data, data.draw(st.integers(3, 14)))
    reference_held, reference = deliver(made)
    expected = the_view(reference_held, s.lineage)
    assert expected == the_view(s.w.held, s.lineage)  # the world admitted as it went: the same view
    order = data.draw(st.permutations(made))
    held, outcome = deliver(order)
    assert outcome == reference
    assert the_view(held, s.lineage) == expected
    # without anything that was refused (the forgeries), the view is the same
    honest = [c for c in order if reference[c.did] in ("admitted", "pending")]
    held2, _ = deliver(honest)
    assert the_view(held2, s.lineage) == expected


def test_a_forged_head_never_shows():
    """A fixed case: M's and B's forged versions on the shown head are refused; the head stays."""
    s = Story()
    before = the_view(s.w.held, s.lineage)
    for forged in (s.by(M, [s.t3], status="abandoned"), s.by(B, [s.t3], title="forged"),
                   s.by(C, [s.t3], assigned=[C], next_check_at=s.w.t + HOUR)):
        assert s.w.put(forged).kind == "refused"
    assert the_view(s.w.held, s.lineage) == before
    assert parse_ms(s.t3.head["timestamp"]) == s.t3.timestamp_ms
