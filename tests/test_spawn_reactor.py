"""The reactor follows a parent's children (spawn contract, decision 4): a child going dead is
escalated once per silence episode, to the parent itself unless [reactor.mentors] names another.

In-process over a real store with a hand-driven clock, then with real processes: a parent and a
child node, the child killed with SIGKILL."""

from __future__ import annotations

import dataclasses

import trio

from meshnode.identity.keys import NodeKey
from meshnode.reactor.service import with_children
from meshnode.spawn import family
from meshnode.spawn.family import ChildRecord
from meshnode.store.peers import set_liveness
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
    from meshnode.config import DEFAULTS
    from meshnode.reactor.service import reactor_config, tracked_dids

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
