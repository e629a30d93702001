"""The reactor follows a parent's children (spawn contract, decision 4): a child going dead is
escalated once per silence episode, to the parent itself unless [reactor.mentors] names another.

In-process over a real store with a hand-driven clock, then with real processes: a parent and a
child node, the child killed with SIGKILL."""

from __future__ import annotations

import dataclasses

import trio

from meshnode.base.identity.keys import NodeKey
from meshnode.engines.reactor.service import with_children
from meshnode.records import family
from meshnode.records.family import ChildRecord
from meshnode.store.peers import set_liveness
from spawnlab import children_cleanup, root  # noqa: F401 (fixtures; the root outlives the children)
from test_reactor_scenarios import FakeCycle, _service

T0 = 1_780_000_000_000
H = 3_600_000


def death_escalations(db, child_did: str) -> list[tuple[str, str]]:
    """(decision, why) of every escalation of the child's liveness.dead events: each one is a
    decision ``escalated`` on an event keyed live:dead:<child>:<episode>."""
    return db.conn.execute("SELECT dedupe_key, why FROM reactor_decisions WHERE action = 'escalated'"
                           " AND dedupe_key LIKE ? ORDER BY id", (f"live:dead:{child_did}:%",)).fetchall()


def _record(db, name: str, heard_ms: int | None) -> str:
    k = NodeKey.generate()
    family.record_child(db, ChildRecord(did=k.did, peer_id=k.peer_id, name=name, kind="newborn", depth=1,
                                        autostart="none"), T0 - H)
    if heard_ms is not None:
        set_liveness(db, k.did, state="ok", last_heard_ms=heard_ms, last_seq=1, now_ms=heard_ms)
    return k.did


def test_with_children_adds_self_as_mentor_but_keeps_a_configured_one():
    from meshnode.base.config import DEFAULTS
    from meshnode.engines.reactor.service import reactor_config, tracked_dids

    me, a, b, other = (NodeKey.generate().did for _ in range(4))
    cfg = reactor_config({**DEFAULTS["reactor"], "mentors": {b: other}}, me)
    merged = with_children(cfg, [a, b], me)
    assert dict(merged.mentors) == {a: me, b: other} and dict(cfg.mentors) == {b: other}
    assert merged.mentor_of(a) == me and merged.mentor_of(b) == other
    assert tracked_dids(merged, [], [], me) == {a, b, other}
    assert with_children(cfg, [], me) is cfg


def _scan_until(service, t, at_ms: int):
    t[0] = at_ms
    return service.scan()


def test_a_dead_child_escalates_to_its_parent_once_per_silence(tmp_path):
    key, t = NodeKey.generate(), [T0]

    async def main():
        store, service = await _service(tmp_path, key, {}, FakeCycle(), clock=lambda: t[0])
        try:
            child = await store.write(_record, "kid", T0)
            removed = await store.write(_record, "gone", T0)
            await store.write(family.mark_removed, removed, T0)
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await _scan_until(service, t, T0 + 60_000)
                assert child in service._tracked and removed not in service._tracked
                assert service.cfg.mentor_of(child) == key.did
                for step in range(6):  # past dead_hours (72 h), then scans every 10 minutes
                    await _scan_until(service, t, T0 + 73 * H + step * 600_000)
            escalations = await store.read(death_escalations, child)
            assert [k for k, _ in escalations] == [f"live:dead:{child}:{T0}"], escalations
            assert f"to {key.did}" in escalations[0][1]  # the parent itself: a local mentor
            note = await store.read(lambda db: db.conn.execute(
                "SELECT agent FROM reactor_events WHERE event_type = 'note.escalation' AND dedupe_key = ?",
                (f"esc:mentor:{child}:live:dead:{child}:{T0}",)).fetchone())
            assert note == (key.did,)  # the parent's own agent is woken with it
            assert await store.read(death_escalations, removed) == []
            # heard again, then silent again: a new episode, one more escalation
            await store.write(set_liveness, child, state="ok", last_heard_ms=T0 + 80 * H, last_seq=2,
                              now_ms=T0 + 80 * H)
            service.liveness.heard(child, T0 + 80 * H)
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for step in range(4):
                    await _scan_until(service, t, T0 + 153 * H + step * 600_000)
            keys = [k for k, _ in await store.read(death_escalations, child)]
            assert keys == [f"live:dead:{child}:{T0}", f"live:dead:{child}:{T0 + 80 * H}"]
        finally:
            await store.aclose()

    trio.run(main)


def test_a_child_with_a_configured_mentor_is_escalated_to_that_mentor(tmp_path):
    key, mentor, t = NodeKey.generate(), NodeKey.generate(), [T0]

    async def main():
        store, service = await _service(tmp_path, key, {}, FakeCycle(), clock=lambda: t[0])
        try:
            child = await store.write(_record, "kid", T0)
            service.configured = service.cfg = dataclasses.replace(service.cfg, mentors={child: mentor.did})
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await _scan_until(service, t, T0 + 60_000)
                for step in range(4):
                    await _scan_until(service, t, T0 + 73 * H + step * 600_000)
            rows = await store.read(lambda db: db.conn.execute(
                "SELECT to_id, level, container_id IS NOT NULL FROM reactor_escalations WHERE event_key LIKE ?",
                (f"live:dead:{child}:%",)).fetchall())
            assert rows == [(mentor.did, 1, 1)]  # one note, sent, to the configured mentor
            assert len(await store.read(death_escalations, child)) == 1
        finally:
            await store.aclose()

    trio.run(main)


def test_a_child_removed_while_followed_is_forgotten(tmp_path):
    key, t = NodeKey.generate(), [T0]

    async def main():
        store, service = await _service(tmp_path, key, {}, FakeCycle(), clock=lambda: t[0])
        try:
            child = await store.write(_record, "kid", T0)
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await _scan_until(service, t, T0 + 60_000)
                assert child in service._tracked and service.liveness.state(child) is not None
                await store.write(family.mark_removed, child, T0 + 120_000)
                await _scan_until(service, t, T0 + 180_000)  # the next scan, not ten minutes later
                assert child not in service._tracked and service.liveness.state(child) is None
                assert service.cfg.mentor_of(child) is None
                for step in range(3):
                    await _scan_until(service, t, T0 + 73 * H + step * 600_000)
            assert await store.read(death_escalations, child) == []
        finally:
            await store.aclose()

    trio.run(main)


# --- real processes ---------------------------------------------------------------------------

# hour-scale thresholds of a few seconds: quiet 2.2 s, stale 4.3 s, dead 10.8 s (heartbeats every
# 0.5 s, FAST_NET), wide enough that a busy machine never makes a live child look dead
FAST_REACTOR = {"MESHNODE_REACTOR_SCAN_SECONDS": "0.5", "MESHNODE_REACTOR_QUIET_HOURS": "0.0006",
                "MESHNODE_REACTOR_STALE_HOURS": "0.0012", "MESHNODE_REACTOR_DEAD_HOURS": "0.002",
                "MESHNODE_COGNITION_ENABLED": "false"}


def _read(node, fn):
    """``fn(conn)`` on a read-only connection to a node's database (WAL: the node keeps writing)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{node.home / 'data' / 'meshnode.db'}?mode=ro", uri=True, timeout=10)
    try:
        return fn(conn)
    finally:
        conn.close()


def tie(parent, child) -> None:
    """What a spawn writes in both stores, written by hand into two fresh homes (the parent
    running, the child not yet started): a test of the reactor, not of spawn_child."""
    from meshnode.store import Database

    cdb = Database(child.home / "data" / "meshnode.db")
    try:
        family.tie_parent(cdb, parent_did=parent.did, parent_peer_id=parent.peer_id, parent_name=parent.name,
                          addresses=parent.addresses, kind="newborn", depth=1, now_ms=T0)
    finally:
        cdb.close()
    child.set_bootstrap(parent, address_filter="/ip4/127.0.0.1/")


def test_a_child_killed_with_sigkill_is_escalated_once_at_its_parent(tmp_path):
    import json

    from meshharness import Node, metric, wait_until
    from meshnode.base.identity.did import did_to_peer_id
    from meshnode.store import Database

    parent, child = Node(tmp_path, "parent", env=FAST_REACTOR), Node(tmp_path, "child", env=FAST_REACTOR)
    pdb = Database(parent.home / "data" / "meshnode.db")
    try:
        family.record_child(pdb, ChildRecord(did=child.did, peer_id=did_to_peer_id(child.did), name="child",
                                             kind="newborn", depth=1, autostart="none", home=str(child.home)), T0)
    finally:
        pdb.close()
    try:
        parent.start()
        tie(parent, child)
        child.start()

        def listed() -> dict:
            return {r["did"]: r for r in json.loads(parent.cli("children", "list", "--json"))}

        wait_until(lambda: listed()[child.did]["liveness"] == "ok", 60, "the parent to hear its child")
        assert parent.call("reactor_status")["liveness_tracked"] >= 1
        child.kill()  # SIGKILL: no goodbye, the heartbeats just stop
        escalated = wait_until(lambda: _read(parent, lambda c: death_escalations(_Conn(c), child.did)), 90,
                               "one escalation of the dead child at its parent")
        assert len(escalated) == 1 and f"to {parent.did}" in escalated[0][1], escalated
        scans = metric(parent, "reactor_scans_total")
        wait_until(lambda: metric(parent, "reactor_scans_total") >= scans + 6, 60, "six more scans")
        again = _read(parent, lambda c: death_escalations(_Conn(c), child.did))
        assert again == escalated, again  # still exactly one: the silence is one episode
        assert listed()[child.did]["liveness"] in ("quiet", "stale", "dead")
        shown = json.loads(parent.cli("children", "show", "child", "--json"))  # through the running node
        assert shown["did"] == child.did and shown["home"] == str(child.home)
        removed = json.loads(parent.cli("children", "remove", child.did, "--json"))
        assert removed["state"] == "removed" and removed["home_deleted"] is None and child.home.is_dir()
        wait_until(lambda: parent.call("reactor_status")["liveness_tracked"] == 0, 30,
                   "the parent's reactor to let the removed child go")
    finally:
        child.kill()
        parent.stop()


class _Conn:
    """A bare sqlite3 connection where a function expects a Database (``db.conn``)."""

    def __init__(self, conn):
        self.conn = conn


def test_two_generations_depth_shown_by_children_list_and_max_depth_refused(root, children_cleanup):
    """A running parent spawns a started child, the child spawns a started grandchild: each
    `children list` shows its own child with its depth, and the grandchild, at max_depth
    (2, reaching the descendants through the config they inherit), may spawn no further."""
    import json
    import subprocess
    import sys

    from meshharness import Node, wait_until
    from spawnlab import spawn_json

    parent = Node(root, "parent", env={"MESHNODE_SPAWN_MAX_DEPTH": "2", **FAST_REACTOR})
    try:
        parent.start()
        kid = spawn_json(parent, "--kind", "newborn", "--start")
        children_cleanup.append(kid["home"])
        assert kid["depth"] == 1 and kid["started"], kid

        def listed(home: str) -> list[dict]:
            out = subprocess.run([sys.executable, "-m", "meshnode", "--home", home, "children", "list", "--json"],
                                 env=parent.env, capture_output=True, text=True, timeout=60,
                                 stdin=subprocess.DEVNULL)
            assert out.returncode == 0, out.stderr
            return json.loads(out.stdout)

        grandkid = spawn_json(kid["home"], "--kind", "newborn", "--start", env=_no_meshnode(parent.env))
        children_cleanup.append(grandkid["home"])
        assert grandkid["depth"] == 2, grandkid
        [row] = listed(kid["home"])
        assert (row["did"], row["depth"], row["state"]) == (grandkid["did"], 2, "active")
        [row] = listed(str(parent.home))
        assert (row["did"], row["depth"]) == (kid["did"], 1)
        wait_until(lambda: listed(kid["home"])[0]["liveness"] == "ok", 60, "the child to hear the grandchild")
        refused = subprocess.run([sys.executable, "-m", "meshnode", "--home", grandkid["home"], "spawn", "--kind",
                                  "newborn"], env=_no_meshnode(parent.env), capture_output=True, text=True,
                                 timeout=120, stdin=subprocess.DEVNULL)
        assert refused.returncode == 1 and "max_depth" in refused.stderr, refused.stderr
        assert listed(grandkid["home"]) == []
    finally:
        parent.stop()


def _no_meshnode(env: dict) -> dict:
    """The environment of a person at the child's shell: no MESHNODE_* of the parent's test."""
    return {k: v for k, v in env.items() if not k.startswith("MESHNODE_")}
