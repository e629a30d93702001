"""GMP across real node processes (issue 14 item 8): a goal decomposed, a task delegated by
interest, accepted, worked on and completed while a participant watches every step; a holder
killed mid-task and its task offered to another after the grace; a connected node that takes no
part never holding anything of the private goal; a forged version refused in the push ack.

Liveness is fast here (heartbeats every 0.5 s, dead after 5 s of silence, a grace of 1 s, the
node looking for stale tasks every 0.5 s) so the whole story waits for well under a minute."""

from __future__ import annotations

import base64
import time

from meshharness import Node, metric, wait_until
from meshnode.net.control import ControlError

GMP_ENV = {"MESHNODE_COGNITION_ENABLED": "false", "MESHNODE_NET_DEAD_AFTER_SECONDS": "5",
           "MESHNODE_GMP_CHECK_SECONDS": "0.5", "MESHNODE_GMP_DEAD_GRACE_SECONDS": "1",
           "MESHNODE_GMP_RECEIPT_SECONDS": "2"}
STEP = 30  # seconds any one step may take on a loaded machine (most take well under one)


def show(node: Node, task: str) -> dict | None:
    try:
        return node.call("task_show", {"task": task})
    except ControlError:
        return None  # not held there (yet)


def holds_all(node: Node, dids: set[str]) -> bool:
    return set(node.call("received", {"dids": sorted(dids)})) == dids


def offer_to(node: Node, task: str):
    """The open offer of ``task`` naming ``node``, once it has arrived there."""
    shown = show(node, task)
    return next((e["did"] for e in (shown or {}).get("entries", [])
                 if e["kind"] == "delegation" and node.did in e["candidates"]), None)


def steps_of(shown: dict) -> set[str]:
    """Every container of a task's history as ``task_show`` gives it: entries, versions held."""
    dids = {e["did"] for e in shown["entries"]} | set(shown["heads"]) | {shown["container_did"], shown["lineage"]}
    for h in shown["holders"]:
        dids |= {d for d in (h["from_version"], h["to_version"]) if d}
    return dids


def test_delegation_progress_reassignment_and_privacy_across_four_nodes(tmp_path):
    started = time.monotonic()
    a = Node(tmp_path, "alice", env=GMP_ENV)
    b = Node(tmp_path, "bob", env={**GMP_ENV, "MESHNODE_NET_INTERESTS": "rust"})
    c = Node(tmp_path, "carol", env={**GMP_ENV, "MESHNODE_NET_INTERESTS": "docs"})
    d = Node(tmp_path, "dave", env=GMP_ENV)
    nodes = [a, b, c, d]
    try:
        a.start()
        for n in (b, c, d):
            n.set_bootstrap(a)
            n.start()
        wait_until(lambda: [r["did"] for r in (a.try_call("find", {"interest": "rust"}) or [])] == [b.did],
                   STEP, "alice to find bob by his interest")

        # A creates a goal with C as participant and decomposes it
        goal = a.call("goal_add", {"title": "Ship the bridge", "participants": [c.did]})["lineage"]
        t1 = a.call("task_add", {"goal": goal, "title": "build adapter", "tags": ["rust"]})["lineage"]
        t2 = a.call("task_add", {"goal": goal, "title": "write docs", "tags": ["docs"]})["lineage"]
        written = {goal, t1, t2}

        # delegation by interest: the offer reaches bob at once, bob's node sends a receipt
        offer = a.call("task_assign", {"task": t1, "interest": "rust"})
        assert offer["candidates"] == [b.did], offer
        wait_until(lambda: offer_to(b, t1), STEP, "bob to get the offer")
        wait_until(lambda: any(e["kind"] == "receipt" and e["signer"] == b.did for e in show(a, t1)["entries"]),
                   STEP, "alice to get bob's receipt")
        written.add(b.call("task_accept", {"task": t1})["did"])
        wait_until(lambda: (show(b, t1) or {}).get("assigned_to") == [b.did], STEP,
                   "bob to see the version assigning him (alice's node made it on his acceptance)")
        written.add(b.call("task_update", {"task": t1, "status": "in_progress"})["did"])
        written.add(b.call("task_progress", {"task": t1, "progress": 0.5, "summary": "half way"})["did"])
        written.update(b.call("task_done", {"task": t1, "summary": "works"})["versions"])
        done = wait_until(lambda: (s := show(a, t1)) and s["status"] == "completed" and s, STEP,
                          "alice to see the task completed")
        assert [(h["assignee"], h["ended"]) for h in done["holders"]] == [(b.did, "completed")]
        progress = [e for e in done["entries"] if e["kind"] == "progress"]
        assert [(e["signer"], e["counted"]) for e in progress] == [(b.did, True)]
        history = steps_of(done) | written
        wait_until(lambda: holds_all(c, history), STEP, "carol (participant) to hold every step of the task")
        assert show(c, t1)["status"] == "completed"

        # a forged version (by a key that is neither creator nor assignee), pushed by dave: refused
        # with its gmp_* code in the ack, and counted against dave, the pushing peer
        forged = forge_version(a, t1)
        ack = d.call("send", {"did": a.did, "container": base64.b64encode(forged).decode()})
        assert [(r["index"], r["code"]) for r in ack["rejected"]] == [(0, "gmp_not_authorized")], ack
        assert metric(a, "containers_refused", reason="gmp_not_authorized") == 1
        assert metric(a, "invalid_from_peer", code="gmp_not_authorized") == 1

        # the second task: bob takes it and is killed mid-task; alice's node offers it to carol
        a.call("task_assign", {"task": t2, "candidates": [b.did]})
        wait_until(lambda: offer_to(b, t2), STEP, "bob to get the second offer")
        b.call("task_accept", {"task": t2})
        wait_until(lambda: (show(b, t2) or {}).get("assigned_to") == [b.did], STEP, "bob to hold the second task")
        b.call("task_update", {"task": t2, "status": "in_progress"})
        wait_until(lambda: show(a, t2)["status"] == "in_progress", STEP, "alice to see bob start")
        b.kill()
        wait_until(lambda: offer_to(c, t2), STEP, "carol to be offered the task once bob is dead past the grace")
        taken = show(a, t2)
        assert taken["assigned_to"] == [] and taken["reason"] == "reassigned_dead", taken
        assert [(h["assignee"], h["ended"]) for h in taken["holders"]] == [(b.did, "reassigned_dead")]
        offers = [e for e in taken["entries"] if e["kind"] == "delegation"]
        assert offers[-1]["candidates"] == [c.did]  # never the removed holder
        c.call("task_accept", {"task": t2})
        wait_until(lambda: (show(c, t2) or {}).get("assigned_to") == [c.did], STEP, "carol to hold the task")
        c.call("task_done", {"task": t2})
        final = wait_until(lambda: (s := show(a, t2)) and s["status"] == "completed" and s, STEP,
                           "alice to see carol complete it")
        assert [(h["assignee"], h["ended"]) for h in final["holders"]] == [(b.did, "reassigned_dead"),
                                                                          (c.did, "completed")]

        # dave, connected all along and in no goal's audience, never got any of it
        everything = history | steps_of(final) | steps_of(show(c, t2))
        assert d.call("received", {"dids": sorted(everything)}) == {}
        assert d.call("goal_list", {}) == [] and d.call("task_list", {}) == []
        for n in (a, c, d):
            assert n.stop() == 0
    except BaseException:
        for n in nodes:  # what each node knew and said, for the failure's report
            print(f"--- {n.name} ({n.did}) metrics: {n.try_call('metrics')}")
            print("\n".join(n.drain(timeout=0.5)[-40:]))
        raise
    finally:
        for n in nodes:
            n.kill()
    print(f"scenario took {time.monotonic() - started:.1f} s")


def forge_version(holder: Node, task: str) -> bytes:
    """A version of ``task`` signed by an outsider's key, naming the shown version (held by ``holder``)."""
    from meshnode.base.container import decode_container
    from meshnode.domain.gmp import build
    from meshnode.base.identity.keys import NodeKey

    shown = holder.call("task_show", {"task": task})
    raw = bytes.fromhex(holder.call("export", {"did": shown["container_did"]})["hex"])
    head = decode_container(raw, now_ms=int(time.time() * 1000))
    payload = {**head.payload, "status": "pending", "reason": "edited", "title": "mine now"}
    payload.pop("assigned_to", None)
    payload.pop("next_check_at", None)
    c = build.task(NodeKey.generate(), payload, now_ms=int(time.time() * 1000), goal=head.related["in_reply_to"][0],
                   previous=(head.did,))
    return c.to_bytes()
