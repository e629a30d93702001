"""The reactor's driver (reactor/service.py) under faults: a database error after a run, a P1 for an
agent whose wake is still running. In-process over a real store, scans driven by hand."""

from __future__ import annotations

import trio

from test_reactor_scenarios import FakeCycle, FakeWakes, _person_note, _service


class GatedWakes(FakeWakes):
    """The first wake runs until ``gate`` is set; the others end at once."""

    def __init__(self):
        super().__init__()
        self.started, self.gate = trio.Event(), trio.Event()

    async def run(self, job_id: str, context_md: str, *, max_ticks: int, max_runtime_s: float,
                  still_pending=None):
        self.runs.append((job_id, context_md))
        if len(self.runs) == 1:
            self.started.set()
            await self.gate.wait()
        return "ok", None


def _status(db, job_id: str) -> str:
    return db.conn.execute("SELECT status FROM reactor_jobs WHERE job_id = ?", (job_id,)).fetchone()[0]


def test_a_database_error_at_a_run_s_end_is_counted_and_does_not_stop_the_reactor(tmp_path, monkeypatch):
    from meshnode.base.errors import MeshnodeError
    from meshnode.base.identity.keys import NodeKey
    from meshnode.records.reactor import leases

    key = NodeKey.generate()
    real = leases.set_job_status

    def busy_at_the_end(db, job_id, status, now_ms, **kw):
        if status == "checking":
            raise MeshnodeError("db_busy", "database is locked")
        return real(db, job_id, status, now_ms, **kw)

    monkeypatch.setattr(leases, "set_job_status", busy_at_the_end)

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {"scan_seconds": 0.05, "trace_grace_seconds": 0}, cycle)
        try:
            await _person_note(store, key, "could you check the backup of the photo archive tonight?")
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                with trio.fail_after(10):  # the core still hears of the end: the job is checked and closed
                    while not cycle.wakes.runs or await store.read(_status, cycle.wakes.runs[0][0]) in (
                            "queued", "leased", "running", "checking"):
                        await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
            assert service.metrics.get("reactor_run_errors", stage="status") >= 1
        finally:
            await store.aclose()

    trio.run(main)


def test_a_p1_for_an_agent_whose_wake_runs_waits_for_it_instead_of_being_skipped(tmp_path):
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey
    from meshnode.engines.reactor.types import ANY_TRACE, Event, Severity

    key = NodeKey.generate()

    async def main():
        cycle = FakeCycle()
        cycle.wakes = GatedWakes()
        store, service = await _service(tmp_path, key, {}, cycle)
        try:
            await _person_note(store, key, "could you renew the domain of the club before Friday?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await service.scan()
                with trio.fail_after(10):
                    await cycle.wakes.started.wait()
                service._inputs.append(Event("note.direct", "fire alarm", "self", Severity.P1, "p1:fire", "agent",
                                             ANY_TRACE, now_ms(), "test", "the fire alarm rings in the cellar"))
                second = await service.scan()  # P1 passes the wake cooldown: a second job for the same agent
                assert [j["priority"] for j in second["jobs"]] == [1], second
                p1_job = second["jobs"][0]["job_id"]
                assert p1_job not in second["started"]  # the first run still holds the agent
                await service.scan()
                assert await store.read(_status, p1_job) == "queued"  # not skipped: it waits
                cycle.wakes.gate.set()
                with trio.fail_after(10):
                    while len(cycle.wakes.runs) < 2:
                        await service.scan()
                        await trio.sleep(0.02)
            assert cycle.wakes.runs[1][0] == p1_job and "fire alarm" in cycle.wakes.runs[1][1]
        finally:
            await store.aclose()

    trio.run(main)


def disk_events(now_ms: int) -> list[dict]:
    """A plug-in (entry point) with one line: heard once, at the run that is due."""
    return [{"event_type": "disk", "subject": "sda", "dedupe_key": "disk-sda", "severity": "P2",
             "summary": "disk sda 97 % full", "owner": "self"}]


PLUGIN = {"adapters": {"disk": {"entry_point": "test_reactor_service:disk_events"}}}


def _woken_for(summary: dict) -> list[str]:
    return [k for j in summary["jobs"] for k in j["events"]]


def test_a_dry_run_does_not_swallow_what_is_heard_once(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()

    async def main():
        store, service = await _service(tmp_path, key, PLUGIN, FakeCycle(), clock=lambda: 1_780_000_000_000)
        try:
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                dry = await service.scan(dry_run=True)
                assert _woken_for(dry) == ["ext:disk:disk-sda"], dry
                real = await service.scan()  # the plug-in is not due again for 15 minutes
            assert _woken_for(real) == ["ext:disk:disk-sda"], real
        finally:
            await store.aclose()

    trio.run(main)


def test_a_scan_whose_step_could_not_be_written_keeps_what_is_heard_once(tmp_path, monkeypatch):
    import pytest

    from meshnode.base.errors import MeshnodeError
    from meshnode.base.identity.keys import NodeKey
    from meshnode.engines.reactor import persist

    key = NodeKey.generate()
    real_save, calls = persist.save_step, []

    def busy_once(db, step, now_ms, **kw):
        calls.append(now_ms)
        if len(calls) == 1:
            raise MeshnodeError("db_busy", "database is locked")
        return real_save(db, step, now_ms, **kw)

    monkeypatch.setattr(persist, "save_step", busy_once)

    async def main():
        store, service = await _service(tmp_path, key, PLUGIN, FakeCycle(), clock=lambda: 1_780_000_000_000)
        try:
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                with pytest.raises(MeshnodeError):
                    await service.scan()
                again = await service.scan()
            assert _woken_for(again) == ["ext:disk:disk-sda"], again
        finally:
            await store.aclose()

    trio.run(main)


def test_an_escalation_note_that_cannot_be_written_does_not_stop_the_scans(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()

    async def main():
        cycle = FakeCycle()  # the core "runs" and leaves nothing behind; its mentor is named by no DID
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 0, "mentors": {"self": "bob"}},
                                        cycle)
        try:
            await _person_note(store, key, "could you call the plumber about the leak before noon?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for _ in range(4):  # wake, run ended -> check, traces found -> failed -> escalation, again
                    await service.scan()
            assert service.metrics.get("reactor_escalations_unsent", reason="bad_field") >= 1
            assert service.metrics.get("reactor_scans_total") == 4
        finally:
            await store.aclose()

    trio.run(main)


def test_a_run_this_process_still_waits_on_is_not_interrupted_when_its_lease_expires(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key, t = NodeKey.generate(), [1_780_000_000_000]

    async def main():
        cycle = FakeCycle()
        cycle.wakes = GatedWakes()
        store, service = await _service(tmp_path, key, {"max_runtime_seconds": 60}, cycle, clock=lambda: t[0])
        try:
            await _person_note(store, key, "could you look at the heating schedule for the winter?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                first = await service.scan()
                (job,) = first["started"]
                with trio.fail_after(10):
                    await cycle.wakes.started.wait()
                t[0] += 10 * 60_000  # the lease (60 s + 60 s) has expired; the run has not ended
                await service._interrupted()
                assert not [x for x in service._inputs if getattr(x, "exit", None) == "interrupted"]
                assert await store.read(lambda db: db.conn.execute(
                    "SELECT exit FROM reactor_jobs WHERE job_id = ?", (job,)).fetchone()[0]) is None
                cycle.wakes.gate.set()
            assert await store.read(_status, job) == "checking"
        finally:
            await store.aclose()

    trio.run(main)


_MEET = __import__("threading").Barrier(2, timeout=3)


def meet_then_report(now_ms: int) -> list[dict]:
    """A plug-in that returns only once another plug-in runs at the same time (else it fails)."""
    _MEET.wait()
    return disk_events(now_ms)


def test_due_plug_ins_run_side_by_side(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()
    both = {"adapters": {n: {"entry_point": "test_reactor_service:meet_then_report", "timeout_seconds": 5}
                         for n in ("disk1", "disk2")}}

    async def main():
        _MEET.reset()
        store, service = await _service(tmp_path, key, both, FakeCycle(), clock=lambda: 1_780_000_000_000)
        try:
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                summary = await service.scan()
            assert {r["exit"] for r in service.plugin_runs.values()} == {"ok"}, service.plugin_runs
            assert sorted(_woken_for(summary)) == ["ext:disk1:disk-sda", "ext:disk2:disk-sda"], summary
        finally:
            await store.aclose()

    trio.run(main)


def test_a_stop_between_an_escalation_note_and_its_record_sends_no_second_note(tmp_path, monkeypatch):
    from meshnode.base.errors import MeshnodeError
    from meshnode.base.identity.keys import NodeKey
    from meshnode.engines.reactor import persist
    from test_reactor_scenarios import _operator_notes

    key = NodeKey.generate()
    real, calls = persist.record_escalation, []

    def stopped_once(db, esc_key, container_id):
        calls.append(esc_key)
        if len(calls) == 1:
            raise MeshnodeError("db_busy", "database is locked")
        return real(db, esc_key, container_id)

    monkeypatch.setattr(persist, "record_escalation", stopped_once)

    async def main():
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 0}, FakeCycle())
        try:
            await _person_note(store, key, "could you call the plumber about the leak before noon?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for _ in range(6):  # wake, end, check -> failed -> escalation (its record fails once), again
                    try:
                        await service.scan()
                    except MeshnodeError:
                        pass
            assert calls, "no escalation was sent"
            assert len(await store.read(_operator_notes)) == 1
        finally:
            await store.aclose()

    trio.run(main)


def test_status_counts_the_wakes_of_the_hour_as_the_ceiling_does_not_the_escalation_watches(tmp_path):
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey
    from meshnode.records.reactor import audit

    key = NodeKey.generate()

    async def main():
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 0}, FakeCycle())
        try:
            await _person_note(store, key, "could you call the plumber about the leak before noon?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for _ in range(4):  # wake, end, check -> failed -> escalation with its watch job
                    await service.scan()
            kinds = await store.read(lambda db: [k for (k,) in db.conn.execute(
                "SELECT coalesce(json_extract(job, '$.kind'), 'wake') FROM reactor_jobs")])
            assert sorted(kinds) == ["wake", "watch"], kinds
            assert (await store.read(audit.status, now_ms()))["wakes_last_hour_total"] == 1
        finally:
            await store.aclose()

    trio.run(main)


def test_a_wake_context_names_its_peers_lists_the_node_s_tasks_and_the_silent_peers(tmp_path):
    """The driver completes the core's context with what only the store and the hour-scale tracker
    know: the sender's name, this node's tasks that need something, and peers gone quiet."""
    import json

    from meshnode.base.container import now_ms
    from meshnode.records.gmp import service as gmp
    from meshnode.base.identity.keys import NodeKey
    from meshnode.domain.notes import make_note
    from meshnode.store.peers import upsert_peer

    key, peer, quiet = NodeKey.generate(), NodeKey.generate(), NodeKey.generate()

    def setup(db):
        t = now_ms()
        upsert_peer(db, peer.did, peer_id=peer.peer_id, now_ms=t, source="exchange", name="isaac")
        upsert_peer(db, quiet.did, peer_id=quiet.peer_id, now_ms=t, source="exchange", name="quinn")
        goal = gmp.goal_add(db, key, t, title="Ship the bridge")["lineage"]
        gmp.task_add(db, key, t + 1, goal=goal, title="write the adapter")  # created here, held by nobody
        note = make_note(peer, f"@{key.did} could you look at the adapter plan today?", now_ms=t + 2,
                         audience="friends", recipients=[key.did])
        assert db.put_container(note, received_at_ms=t + 2)

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {}, cycle)
        try:
            await store.write(setup)
            service.liveness.heard(quiet.did, now_ms() - 30 * 3_600_000)  # silent for 30 h: stale
            service.liveness.tick(now_ms())
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await service.scan()
                with trio.fail_after(10):
                    while not cycle.wakes.runs:
                        await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
            job_id, md = cycle.wakes.runs[0]
            ctx = json.loads((tmp_path / "reactor" / "wake" / f"{job_id}.json").read_text())
            assert [i.get("from_name") for i in ctx["inbox"]] == ["isaac"], ctx["inbox"]
            assert ctx["routing"] == {"isaac": peer.did, "quinn": quiet.did}  # the names used in it
            assert [t["title"] for t in ctx["due_tasks"]] == ["write the adapter"]
            assert ctx["due_tasks"][0]["due"] == "unassigned"
            assert {(x["did"], x["state"], x["name"]) for x in ctx["liveness"]} == {(quiet.did, "stale", "quinn")}
            assert "from isaac" in md and "write the adapter" in md and "quinn" in md
        finally:
            await store.aclose()

    trio.run(main)


def _agent_reply(store, key, text: str):
    """What the agent's regular tick wrote: a substantive note of its own (source llm)."""
    from meshnode.base.container import now_ms
    from meshnode.domain.notes import make_note

    note = make_note(key, text, now_ms=now_ms(), source="llm")
    return store.write(lambda db: db.put_container(note, received_at_ms=now_ms(), local={"tags": [], "read": True}))


def _event_status(db, key: str) -> str:
    return db.conn.execute("SELECT status FROM reactor_events WHERE dedupe_key = ?", (key,)).fetchone()[0]


def test_a_wake_whose_message_a_tick_answered_is_settled_without_a_run(tmp_path):
    """Issue 33: the driver re-checks a wake's events before the LLM; what a tick answered meanwhile
    settles the job (skipped, no run), and its wake cooldown is lifted."""
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {}, cycle)
        try:
            await _person_note(store, key, "could you water the tomatoes in the greenhouse tonight?")
            await trio.sleep(0.01)  # the answer comes after the message (millisecond timestamps)
            await _agent_reply(store, key, "Done: I set the greenhouse watering for 20:00 tonight.")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                summary = await service.scan()
            (job,) = summary["jobs"]
            assert cycle.wakes.runs == [] and cycle.wakes.settled == [job["job_id"]]
            after = await service.scan()
            assert ("settled", job["job_id"]) in [(d["action"], d["dedupe_key"]) for d in after["decisions"]]
            assert await store.read(_status, job["job_id"]) == "skipped"
            assert await store.read(_event_status, job["events"][0]) == "done"
            assert not [k for k in service.reactor.cooldowns(service.clock()) if k.startswith("wake:")]
        finally:
            await store.aclose()

    trio.run(main)


def test_a_tick_that_answered_a_held_message_settles_it(tmp_path):
    """A message held by its kind's cooldown, then answered by a regular tick: the scan after the
    tick settles it (done), so no wake comes for it when the cooldown ends."""
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {}, cycle)
        try:
            await _person_note(store, key, "please book the village hall for the meeting on Thursday?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                await service.scan()  # woken for the first: direct_note cools for 6 h
                assert len(cycle.wakes.runs) == 1
                await _person_note(store, key, "and could you order two dozen chairs for it as well?")
                held = await service.scan()
                (key2,) = [d["dedupe_key"] for d in held["decisions"] if d["action"] == "held_cooldown"]
                await trio.sleep(0.01)
                await _agent_reply(store, key, "Ordered 24 chairs for Thursday's meeting at the village hall.")
                service.tick_ended({"wake_job": None, "mode": "normal"})
                settled = await service.scan()
            assert ("settled", key2) in [(d["action"], d["dedupe_key"]) for d in settled["decisions"]], settled
            assert await store.read(_event_status, key2) == "done"
            assert service.metrics.get("reactor_settled_total", by="tick") == 1
        finally:
            await store.aclose()

    trio.run(main)
