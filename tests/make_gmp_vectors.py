"""Generate protocols/vectors/gmp.json: GMP containers, their admission outcomes and the views.

Fixed seeds for A (creator), B, C (participants) and M (outsider), a fixed clock (tests/gmp_fixtures),
and Ed25519's deterministic signatures make every byte reproducible. Each case lists its containers
in arrival order with the outcome expected right then (admitted, pending with the missing DIDs, a
gmp_* refusal, or class_schema for one refused at step 7), the final outcome of each after pending
ones were re-run, and the expected view of the case's task. ``--check`` exits 1 if the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gmp_cases import all_cases
from gmp_fixtures import KEYS, SEEDS
from meshnode.base.container import format_ms
from meshnode.domain.gmp import view

OUT = Path(__file__).resolve().parent.parent / "protocols" / "vectors" / "gmp.json"
NAMES = {k.did: n for n, k in KEYS.items()}


def deliver(items):
    """Admit in order with a pending queue; returns (held, immediate outcomes, final outcomes)."""
    from meshnode.domain.gmp.rules import MemoryHeld, admit

    held, now, final, waiting = MemoryHeld(), [], {}, {}

    def run(c, first: bool):
        out = admit(c, held)
        got = out.kind if out.kind != "refused" else out.code
        if first:
            now.append({"outcome": got, **({"missing": list(out.missing)} if out.missing else {})})
        final[c.did] = got
        if out.kind == "pending":
            waiting.setdefault(out.missing[0], []).append(c)
        if out.kind == "admitted":
            held.add(c)
            for again in waiting.pop(c.did, []):
                run(again, False)

    for name, c, expect in items:
        if expect == "class_schema":
            now.append({"outcome": "class_schema"})
            final[c.did] = "class_schema"
        else:
            run(c, True)
    return held, now, final


def task_view(held, lineage: str, liveness: dict, now_ms: int) -> dict:
    versions = held.all_versions(lineage)
    heads = view.heads_of(versions)
    first = held.get(lineage)
    head = view.shown_head(heads, first.sender_did)
    st = view.task_state(head)
    goal_lineage = first.related["in_reply_to"][0]
    goal_heads = view.heads_of(held.all_versions(goal_lineage))
    goal_head = view.shown_head(goal_heads, held.get(goal_lineage).sender_did)
    entries = [c for c in held.all() if c.cls == "workflow_entry" and c.related["in_reply_to"] == [lineage]]
    return {
        "lineage": lineage, "head": head.did, "forks": len(heads) - 1, "heads": sorted(h.did for h in heads),
        "status": st.status, "assigned_to": [NAMES.get(d, d) for d in st.assigned_to],
        "due_at": None if st.due_at_ms is None else format_ms(st.due_at_ms),
        "overdue_at": None if st.overdue_at_ms is None else format_ms(st.overdue_at_ms),
        "holders": [{"assignee": NAMES.get(h.assignee, h.assignee), "from": h.from_version, "to": h.to_version,
                     "ended": h.ended} for h in view.holder_spans(view.path_to(head, held))],
        "entries": {e.did: list(view.counts(e, held)) for e in sorted(entries, key=lambda e: e.did)},
        "goal_status": goal_head.payload["status"],
        "due": view.due_state(status=st.status, assigned_to=st.assigned_to, due_at_ms=st.due_at_ms,
                              overdue_at_ms=st.overdue_at_ms, liveness={KEYS[n].did: s for n, s in liveness.items()},
                              offer_open=False, forks=len(heads) - 1, goal_status=goal_head.payload["status"],
                              rule=st.rule, now_ms=now_ms),
    }


def render_case(case: Case, lineage: str | None, liveness: dict | None = None) -> dict:
    held, now, final = deliver(case.items)
    for (name, c, expect), got in zip(case.items, now):
        assert expect is None or got["outcome"] == expect, (case.description, name, got)
    out = {"description": case.description, "now": format_ms(case.w.t),
           "containers": [{"name": name, "signer": NAMES[c.sender_did], "did": c.did, "hex": c.to_bytes().hex(),
                           "expect": got} for (name, c, _), got in zip(case.items, now)],
           "final": {c.did: final[c.did] for _, c, _ in case.items}}
    if lineage:
        out["liveness"] = liveness or {}
        out["view"] = task_view(held, lineage, liveness or {}, case.w.t)
    return out


def render() -> str:
    doc = {"format": "meshnode gmp vectors", "spec": "protocols/gmp.md",
           "keys": {n: {"seed": SEEDS[n].hex(), "did": KEYS[n].did} for n in "ABCM"},
           "cases": [render_case(case, lineage, liveness) for case, lineage, liveness in all_cases()]}
    return json.dumps(doc, indent=1) + "\n"


if __name__ == "__main__":
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(text)} bytes)")

