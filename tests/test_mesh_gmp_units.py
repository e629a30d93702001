"""net/mesh_gmp without a network: a real store and service, a fake mesh that records pushes.

The multi-process story is tests/test_mesh_gmp.py; here the node's own decisions are pinned:
who gets re-offered a task taken back (never the removed holder), how often an unanswered
offer is pushed again, how the actions' arguments are checked, how candidates are ranked."""

from __future__ import annotations

import pytest
import trio

from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp import build
from meshnode.records.gmp import service
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.liveness import LivenessTracker
from meshnode.net.mesh_gmp import GmpSettings, MeshGmp, rank_candidates
from meshnode.base.identity.did import did_to_peer_id
from meshnode.store import Store
from meshnode.store.peers import set_liveness, upsert_peer

T0 = 1_800_000_000_000


class FakeMesh:
    """What MeshGmp uses of the Mesh: push, fetch, find_interest, liveness, refresh_known."""

    def __init__(self, providers: dict[str, list[str]]):
        self.providers, self.pushed = providers, []
        self.liveness = LivenessTracker()

    async def push(self, did, containers):
        self.pushed.append((did, [c.did for c in containers]))
        return {"op": "ack", "accepted": [c.did for c in containers], "duplicates": [], "rejected": []}

    async def fetch(self, did, dids):
        return []

    async def find_interest(self, tag):
        return [{"did": d} for d in self.providers.get(tag, [])]

    async def refresh_known(self):
        pass

    def remember_refusals(self, did, batch, ack):
        pass


def dead(db, did: str, now: int) -> None:
    upsert_peer(db, did, peer_id=did_to_peer_id(did), now_ms=now, source="exchange")
    set_liveness(db, did, state="dead", last_heard_ms=now - 1, last_seq=-1, now_ms=now)


async def command(gmp: MeshGmp, name: str, args: dict):
    """Action ``name`` for the person, by the node whose GMP service ``gmp`` is (as its control socket runs it)."""
    app = App(gmp.store, gmp.key, mesh=gmp.mesh, clock=gmp.clock, gmp=gmp)
    return await dispatch(app, person("cli"), name, args)


def run_with_node(tmp_path, providers, body, settings=GmpSettings(receipt_s=1.0, dead_grace_s=10.0)):
    a, b, c = NodeKey(bytes([1]) * 32), NodeKey(bytes([2]) * 32), NodeKey(bytes([3]) * 32)
    clock = [T0]

    async def main():
        async with await Store.open(tmp_path / "a.db") as store:
            mesh = FakeMesh(providers(b, c))
            gmp = MeshGmp(store, mesh, a, settings, Metrics(), clock=lambda: clock[0])
            async with trio.open_nursery() as nursery:
                await nursery.start(gmp.run)
                await body(gmp, store, mesh, (a, b, c), clock)
                nursery.cancel_scope.cancel()

    trio.run(main)


def test_a_task_taken_from_a_dead_holder_is_offered_to_another_peer_never_to_it(tmp_path):
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g", "participants": [c.did]}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t", "tags": ["docs"]}))["lineage"]
        offer = await command(gmp, "task_assign", {"task": task, "interest": "docs"})
        ranked = sorted([b.did, c.did], key=lambda d: rank_candidates(task, {b.did: (0.5, 0), c.did: (0.5, 0)},
                                                                         {}, 0.0).index(d))
        assert offer["candidates"] == ranked[:1]
        holder = offer["candidates"][0]
        other = c if holder == b.did else b
        holder_key = b if holder == b.did else c
        accept = await store.write(lambda db: service.task_accept(db, holder_key, clock[0] + 1, task=task))
        await gmp._react([accept["did"]])  # as if it had arrived: alice's node assigns the holder
        with trio.fail_after(10):  # its push to the (still alive) holder runs in the background: let it land
            while not any(to == holder for to, _ in mesh.pushed):
                await trio.sleep(0.01)
        shown = await store.read(lambda db: service.task_show(db, task=task, now_ms=clock[0]))
        assert shown["assigned_to"] == [holder]
        await store.write(dead, holder, clock[0])
        clock[0] += 5_000  # dead for less than the grace: nothing moves
        assert (await gmp.check())["reassigned"] == []
        clock[0] += 10_000
        mesh.pushed.clear()
        everyone = mesh.providers["docs"]
        mesh.providers["docs"] = [holder]  # only the removed holder announces the tag now
        result = await gmp.check()
        assert [(r["removed"], r["why"]) for r in result["reassigned"]] == [([holder], "reassigned_dead")]
        assert result["offered"] == []  # never to the holder it was taken from: tried again next time
        mesh.providers["docs"] = everyone
        later = MeshGmp(store, mesh, a, gmp.settings, Metrics(), clock=lambda: clock[0])  # as after a restart
        result = await later.check()
        assert [o["to"] for o in result["offered"]] == [[other.did]]
        assert all(to != holder for to, _ in mesh.pushed)  # dead: left to sync
        again = await gmp.check()
        assert again["offered"] == [] and again["reassigned"] == []  # the new offer is open: offered once

    run_with_node(tmp_path, lambda b, c: {"docs": [b.did, c.did]}, body)


def test_an_offer_without_a_receipt_is_pushed_again_twice_then_left_to_sync(tmp_path):
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g"}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t"}))["lineage"]
        offer = (await command(gmp, "task_assign", {"task": task, "candidates": [b.did]}))["offer"]
        assert (b.did, offer) in [(to, dids[-1]) for to, dids in mesh.pushed]  # pushed at once, with the task
        assert (await gmp.check())["retried"] == []  # not yet receipt_seconds old
        retried = []
        for _ in range(4):
            clock[0] += 2_000
            retried += (await gmp.check())["retried"]
        assert retried == [(offer, b.did)] * 2

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_an_answered_offer_is_not_pushed_again(tmp_path):
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g"}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t"}))["lineage"]
        await command(gmp, "task_assign", {"task": task, "candidates": [b.did]})
        await store.write(lambda db: service.task_refuse(db, b, clock[0] + 1, task=task, reason="busy"))
        clock[0] += 5_000
        assert (await gmp.check())["retried"] == []

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_gmp_commands_refuse_unknown_or_missing_arguments(tmp_path):
    async def body(gmp, store, mesh, keys, clock):
        with pytest.raises(MeshnodeError, match="unexpected keyword argument 'owner'"):
            await command(gmp, "goal_add", {"title": "g", "owner": "me"})
        with pytest.raises(MeshnodeError, match="missing a required argument: 'goal'"):
            await command(gmp, "task_add", {"title": "t"})
        with pytest.raises(MeshnodeError, match="no peer announces"):
            goal = (await command(gmp, "goal_add", {"title": "g"}))["lineage"]
            task = (await command(gmp, "task_add", {"goal": goal, "title": "t"}))["lineage"]
            await command(gmp, "task_assign", {"task": task, "interest": "knitting"})

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_candidates_rank_live_then_trust_then_fewer_tasks_then_hash():
    facts = {"did:key:a": (0.5, 0), "did:key:b": (0.9, 3), "did:key:c": (0.9, 1), "did:key:d": (0.2, 0),
             "did:key:e": (0.99, 0)}
    live = {"did:key:a": True, "did:key:b": True, "did:key:c": True, "did:key:d": True, "did:key:e": False}
    assert rank_candidates("did:hmp:t", facts, live, min_trust=0.3) == ["did:key:c", "did:key:b", "did:key:a",
                                                                        "did:key:e"]
    tied = {"did:key:x": (0.5, 0), "did:key:y": (0.5, 0)}
    one = rank_candidates("did:hmp:t1", tied, {}, 0.0)
    assert sorted(one) == ["did:key:x", "did:key:y"] and one == rank_candidates("did:hmp:t1", tied, {}, 0.0)


def test_settings_come_from_the_config(tmp_path):
    from meshnode.base.config import load_config

    config = load_config(tmp_path, environ={"MESHNODE_GMP_DEAD_GRACE_SECONDS": "2", "MESHNODE_SYNC_MIN_TRUST": "0.4"})
    assert GmpSettings.from_config(config) == GmpSettings(offer_s=3600.0, receipt_s=60.0, dead_grace_s=2.0,
                                                          check_s=30.0, min_trust=0.4)


def test_coworkers_are_chosen_by_this_node_never_by_a_stranger(tmp_path):
    """The audience of its own goals, and the creators of goals it signed something under, are not
    strangers to a node; a stranger's goal merely naming it makes no one known."""
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        assert await gmp.coworkers() == set()
        theirs = await store.write(lambda db: service.goal_add(db, b, clock[0], title="b's", participants=[a.did]))
        assert await gmp.coworkers() == set()  # named as participant by b: b is still a stranger
        await command(gmp, "goal_add", {"title": "mine", "participants": [c.did]})
        assert await gmp.coworkers() == {c.did}
        await command(gmp, "task_add", {"goal": theirs["lineage"], "title": "a's part"})
        assert await gmp.coworkers() == {b.did, c.did}  # a signed under b's goal: its own choice

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_an_acceptance_not_reacted_to_is_taken_up_by_the_check(tmp_path):
    """An acceptance stored while no reaction ran (dropped in a flood, or before a restart)
    still assigns its acceptor at the next check."""
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g"}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t"}))["lineage"]
        await command(gmp, "task_assign", {"task": task, "candidates": [b.did]})
        await store.write(lambda db: service.task_accept(db, b, clock[0] + 1, task=task))
        shown = await store.read(lambda db: service.task_show(db, task=task, now_ms=clock[0]))
        assert shown["assigned_to"] == []
        await gmp.check()
        shown = await store.read(lambda db: service.task_show(db, task=task, now_ms=clock[0]))
        assert shown["assigned_to"] == [b.did]

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_a_dead_holders_task_goes_to_the_goals_participants_and_its_owner_is_told_when_nobody_takes_it(tmp_path):
    """Issue 35, defect 5: with no peer announcing the task's tags, a task taken back from a dead
    holder stayed unassigned and nobody was told. Now it is offered to the goal's participants
    (all at once, never the removed holder); while nobody holds it past the bound, the goal's
    owner finds it in the inbox, and can abandon it from there."""
    from meshnode.domain.gmp.reoffer import UNCLAIMED_AFTER_MS

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g", "participants": [b.did, c.did]}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t", "tags": ["nobody-has-this"]}))["lineage"]
        await command(gmp, "task_assign", {"task": task, "candidates": [b.did]})
        accept = await store.write(lambda db: service.task_accept(db, b, clock[0] + 1, task=task))
        await gmp._react([accept["did"]])
        assert (await store.read(lambda db: service.task_show(db, task=task, now_ms=clock[0])))["assigned_to"] == [b.did]
        await store.write(dead, b.did, clock[0])
        clock[0] += 11_000  # past the grace
        mesh.pushed.clear()
        result = await gmp.check()
        assert [(r["removed"], r["why"]) for r in result["reassigned"]] == [([b.did], "reassigned_dead")]
        assert [(o["task"], o["to"]) for o in result["offered"]] == [(task, [c.did])]  # not by interest
        offer = result["offered"][0]["offer"]
        assert any(to == c.did and dids[-1] == offer for to, dids in mesh.pushed)
        assert (await command(gmp, "inbox_count", {}))["by_kind"]["task_unclaimed"] == 0  # not yet past the bound
        clock[0] += UNCLAIMED_AFTER_MS
        listed = await command(gmp, "inbox", {})
        told = [i for i in listed["items"] if i["kind"] == "task_unclaimed"]
        assert [i["ref"] for i in told] == [task] and listed["count"]["by_kind"]["task_unclaimed"] == 1
        assert "nobody took task \"t\"" in told[0]["summary"] and b.did not in told[0]["summary"]
        decided = await command(gmp, "inbox_decide", {"kind": "task_unclaimed", "ref": task, "decision": "abandon"})
        assert decided["result"]["status"] == "abandoned" and decided["count"]["by_kind"]["task_unclaimed"] == 0

    run_with_node(tmp_path, lambda b, c: {}, body)


async def pushed_to(mesh: FakeMesh, did: str, container: str) -> None:
    """Wait until ``container`` was pushed to ``did`` (pushes run in the service's nursery)."""
    with trio.fail_after(10):
        while not any(to == did and container in dids for to, dids in mesh.pushed):
            await trio.sleep(0.01)


def test_receipts_lost_to_a_restart_or_a_flood_are_made_at_start_and_at_each_check(tmp_path):
    """gmp.md 6.1 steps 2 and 5: this node (a) is offered b's task and then assigned it, each stored
    while no reaction ran (the node restarting, or its reaction queue full in a flood): the receipt
    for the offer is made when the node starts, the one for the version at the next check."""
    from meshnode.store.database import Database
    from meshnode.store.views_cogsync import load_stored

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        theirs = Database(tmp_path / "b.db")

        async def arrive(result: dict) -> None:  # stored as from the network, never reacted to
            for did in [d for p in result["push"] if p["to"] == a.did for d in p["dids"]]:
                await store.write(lambda db, d=did: db.put_container(load_stored(theirs.conn, d),
                                                                     received_at_ms=clock[0]))

        goal = service.goal_add(theirs, b, clock[0], title="b's goal")
        task = service.task_add(theirs, b, clock[0] + 1, goal=goal["lineage"], title="t")
        offer = service.task_offer(theirs, b, clock[0] + 2, task=task["lineage"], candidates=[a.did])
        await arrive(offer)
        receipts = "SELECT did FROM gmp_entries WHERE kind = 'receipt' AND offer = ?"
        assert await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchall()) == []
        started = MeshGmp(store, mesh, a, gmp.settings, Metrics(), clock=lambda: clock[0])  # as after a restart
        async with trio.open_nursery() as nursery:
            await nursery.start(started.run)
            with trio.fail_after(10):
                while not await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchall()):
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        receipt = (await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchone()))[0]
        await pushed_to(mesh, b.did, receipt)
        assert (await gmp.check())["receipts"] == []  # made once

        accept = await store.write(lambda db: service.task_accept(db, a, clock[0] + 3, task=task["lineage"]))
        theirs.put_container(await store.read(lambda db: load_stored(db.conn, accept["did"])), received_at_ms=clock[0])
        assigned = service.on_admitted(theirs, b, clock[0] + 4, [accept["did"]])
        await arrive(assigned)
        version = assigned["published"][0]
        assert (await gmp.check())["receipts"] == [version]
        receipt = (await store.read(lambda db: db.conn.execute(receipts, (version,)).fetchone()))[0]
        await pushed_to(mesh, b.did, receipt)
        assert (await gmp.check())["receipts"] == []
        theirs.close()

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_a_version_assigning_a_peer_without_its_receipt_is_pushed_again_twice(tmp_path):
    """The delegator's side of gmp.md 6.1 step 5: the version assigning b (with all b needs to admit
    it) is pushed again while b's receipt for it is missing, twice at most; not once it is there."""
    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        goal = (await command(gmp, "goal_add", {"title": "g"}))["lineage"]
        task = (await command(gmp, "task_add", {"goal": goal, "title": "t"}))["lineage"]
        await command(gmp, "task_assign", {"task": task, "candidates": [b.did]})
        accept = await store.write(lambda db: service.task_accept(db, b, clock[0] + 1, task=task))
        await gmp._react([accept["did"]])
        version = (await store.read(lambda db: db.conn.execute("SELECT container_did FROM tasks WHERE lineage = ?",
                                                               (task,)).fetchone()))[0]
        await pushed_to(mesh, b.did, version)
        assert (await gmp.check())["retried"] == []  # not yet receipt_seconds old
        retried = []
        for _ in range(3):
            clock[0] += 2_000
            mesh.pushed.clear()
            now = (await gmp.check())["retried"]
            if now:
                await pushed_to(mesh, b.did, version)
            retried += now
        assert retried == [(version, b.did)] * 2
        clock[0] += 2_000
        await store.write(lambda db: db.put_container(
            build.entry(b, "receipt", {"received": version, "received_at": clock[0]}, now_ms=clock[0], about=task),
            received_at_ms=clock[0]))
        assert (await gmp.check())["retried"] == [] and gmp._retries == {}  # answered: forgotten

    run_with_node(tmp_path, lambda b, c: {}, body)


def test_a_receipt_whose_push_was_lost_is_pushed_again_when_the_offer_comes_again(tmp_path):
    """The delegator pushing its offer again (no receipt reached it) makes the candidate push the
    receipt it made already, instead of answering only "duplicate"."""
    from meshnode.store.database import Database
    from meshnode.store.views_cogsync import load_stored

    async def body(gmp, store, mesh, keys, clock):
        a, b, c = keys
        theirs = Database(tmp_path / "b.db")
        goal = service.goal_add(theirs, b, clock[0], title="b's goal")
        task = service.task_add(theirs, b, clock[0] + 1, goal=goal["lineage"], title="t")
        offer = service.task_offer(theirs, b, clock[0] + 2, task=task["lineage"], candidates=[a.did])
        for did in offer["push"][0]["dids"]:
            await store.write(lambda db, d=did: db.put_container(load_stored(theirs.conn, d), received_at_ms=clock[0]))
        gmp.arrived(offer["did"], b.did)
        receipts = "SELECT did FROM gmp_entries WHERE kind = 'receipt' AND offer = ?"
        with trio.fail_after(10):
            while not await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchall()):
                await trio.sleep(0.01)
        receipt = (await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchone()))[0]
        await pushed_to(mesh, b.did, receipt)
        mesh.pushed.clear()  # that push was lost
        gmp.arrived(offer["did"], b.did)  # b pushes its offer again
        await pushed_to(mesh, b.did, receipt)
        assert (await store.read(lambda db: db.conn.execute(receipts, (offer["did"],)).fetchall())) == [(receipt,)]
        theirs.close()

    run_with_node(tmp_path, lambda b, c: {}, body)
