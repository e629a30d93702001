"""The reactor's done-when scenario (issue 15) across real node processes, and the seed's MVP points
of protocols/reactor.md section 16 that need no mesh, in-process over a real store.

Across processes: alice delegates a task to bob, whose core is idle (a pause of an hour); bob's
reactor (a scan every half second) wakes bob's core, whose scripted LLM accepts the task, updates it and
ends with a ``reactor_report``; the job is ``ok`` and bob is not woken again for it. carol's LLM
answers only "ok": her wake leaves no trace, and alice, her mentor, receives exactly one escalation
note with the dedupe key, also across a restart of carol.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import trio

from llmharness import ScriptedLLM, command_block, distinct_answers
from meshharness import Node, wait_until

STEP = 30  # seconds any one step may take on a loaded machine (most take a second or two)
REACTOR_ENV = {"MESHNODE_REACTOR_SCAN_SECONDS": "0.5", "MESHNODE_REACTOR_TRACE_GRACE_SECONDS": "0",
               "MESHNODE_REACTOR_MAX_RUNTIME_SECONDS": "30", "MESHNODE_COGNITION_PAUSE_SECONDS": "3600"}
ESCALATION_TOPIC = "reactor-escalation"


def rows(node: Node, sql: str, *args) -> list[tuple]:
    """A read of the node's database (WAL: it reads beside the running node)."""
    conn = sqlite3.connect(f"file:{node.home / 'data' / 'meshnode.db'}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def jobs(node: Node) -> list[tuple]:
    """The node's wake jobs (not the core's watch jobs, which wait for a mentor's answer and run nobody)."""
    return rows(node, "SELECT job_id, status, events FROM reactor_jobs WHERE json_extract(job, '$.kind') = 'wake'"
                      " ORDER BY created_ms")


def last_scan_ms(node: Node) -> int:
    got = rows(node, "SELECT value FROM config WHERE key = 'reactor.last_scan'")
    return json.loads(got[0][0]).get("at_ms", 0) if got else 0


def scans_after(node: Node, t_ms: int, n: int = 2) -> None:
    """Wait until the node's reactor has scanned ``n`` times after ``t_ms`` (its own scan counter)."""
    first = wait_until(lambda: (s := last_scan_ms(node)) > t_ms and s, STEP, f"{node.name} to scan")
    for _ in range(n - 1):
        first = wait_until(lambda f=first: (s := last_scan_ms(node)) > f and s, STEP, f"{node.name} to scan again")


def escalations_at(node: Node) -> list[str]:
    """The texts of the escalation notes the node holds (from another node's reactor)."""
    return [t for (t,) in rows(node, "SELECT text FROM notes WHERE topic = ? ORDER BY id", ESCALATION_TOPIC)]


def answer(i: int, *commands: dict) -> str:
    return distinct_answers(i + 1, lambda n, text: [])[i].split("# Commands:")[0] + command_block(*commands)


def test_a_delegated_task_wakes_the_idle_holder_once_and_silence_reaches_the_mentor_once(tmp_path):
    started = time.monotonic()
    alice = Node(tmp_path, "alice", env={"MESHNODE_COGNITION_ENABLED": "false", "MESHNODE_REACTOR_ENABLED": "false"})
    bob = Node(tmp_path, "bob", env={**REACTOR_ENV, "MESHNODE_REACTOR_MAX_TICKS": "2"})
    carol = Node(tmp_path, "carol", env={**REACTOR_ENV, "MESHNODE_REACTOR_MAX_TICKS": "1",
                                         "MESHNODE_REACTOR_MENTOR": alice.did})
    nodes, llms = [alice, bob, carol], []
    try:
        alice.start()
        goal = alice.call("goal_add", {"title": "Ship the bridge", "participants": [bob.did, carol.did]})["lineage"]
        t_bob = alice.call("task_add", {"goal": goal, "title": "build adapter"})["lineage"]
        t_carol = alice.call("task_add", {"goal": goal, "title": "write docs"})["lineage"]
        report = {"processed_messages": [], "task_updates": [t_bob], "outgoing_messages": [], "blocked": False,
                  "needs_human": False}
        bob_llm = ScriptedLLM(tmp_path, "bob-llm", [
            answer(0),  # the tick at start; then an hour's pause: only a wake makes bob think
            answer(1, {"cmd_id": "a1", "type": "task_accept", "args": {"task": t_bob}}),
            # the next tick comes at once; its answer waits until alice's node has assigned the task to bob
            {"delay": 4.0, "answer": answer(2, {"cmd_id": "u1", "type": "task_update",
                                                "args": {"task": t_bob, "status": "in_progress"}},
                                            {"cmd_id": "r1", "type": "reactor_report", "args": report})},
            answer(3)])
        carol_llm = ScriptedLLM(tmp_path, "carol-llm", ["ok"])
        llms += [bob_llm, carol_llm]
        for node, llm in ((bob, bob_llm), (carol, carol_llm)):
            node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
            node.set_bootstrap(alice)
            node.start()
        wait_until(lambda: len(bob_llm.seen()) >= 1 and len(carol_llm.seen()) >= 1, STEP, "the first ticks")

        # alice delegates; a scan of bob's reactor after the offer's arrival wakes bob's core (that it
        # is the first scan after it: test_the_scan_after_an_offer_arrives_wakes_its_candidate)
        alice.call("task_assign", {"task": t_bob, "candidates": [bob.did]})
        alice.call("task_assign", {"task": t_carol, "candidates": [carol.did]})
        job = wait_until(lambda: jobs(bob), STEP, "bob's reactor to write a wake job")[0]
        offer = "did:hmp:container:" + json.loads(job[2])[0].rsplit("did:hmp:container:", 1)[1]  # offer:<lin>:<did>
        offer_at = rows(bob, "SELECT received_at_ms FROM containers WHERE did = ?", offer)[0][0]
        created = rows(bob, "SELECT created_ms FROM reactor_jobs WHERE job_id = ?", job[0])[0][0]
        assert created >= offer_at, (created, offer_at)  # a scan that came after the offer woke bob for it
        done = wait_until(lambda: (j := jobs(bob)) and j[0][1] in ("ok", "failed") and j[0], STEP,
                          "bob's job to end")
        assert done[1] == "ok", (done, rows(bob, "SELECT action, why FROM reactor_decisions ORDER BY id"))
        assert (bob.home / "reactor" / "wake" / f"{job[0]}.md").exists()
        assert wait_until(lambda: (alice.call("task_show", {"task": t_bob}) or {}).get("status") == "in_progress",
                          STEP, "alice to see bob's update")
        seen = len(bob_llm.seen())
        scans_after(bob, int(time.time() * 1000), 3)
        assert len(jobs(bob)) == 1 and len(bob_llm.seen()) == seen  # not woken again for it
        status = json.loads(bob.cli("reactor", "status", "--json"))
        assert (status["node"], status["core"]) == ("running", "running") and status["next_scan_ms"], status
        once = json.loads(bob.cli("reactor", "scan", "--once", "--json"))  # the running node scans, not the CLI
        assert once["scanned_by"] == "the running node" and once["jobs"] == [], once

        # carol's LLM says "ok": no trace; her mentor alice gets one note with the dedupe key
        wait_until(lambda: (j := jobs(carol)) and j[0][1] == "failed", STEP, "carol's job to fail")
        note = wait_until(lambda: escalations_at(alice), STEP, "alice to receive the escalation")
        assert len(note) == 1 and "dedupe: esc:mentor:" in note[0], note
        key = next(line for line in note[0].splitlines() if line.startswith("dedupe: ")).split(" ", 1)[1]
        assert rows(carol, "SELECT key FROM reactor_escalations") == [(key,)]
        assert carol.stop() == 0
        carol.start()
        scans_after(carol, int(time.time() * 1000), 3)
        assert escalations_at(alice) == note and len(jobs(carol)) == 1
        for n in nodes:
            assert n.stop() == 0
    except BaseException:
        for n in nodes:
            print(f"--- {n.name} ({n.did}) jobs: {jobs(n) if (n.home / 'data').exists() else None}")
            print("\n".join(n.drain(timeout=0.5)[-40:]))
        raise
    finally:
        for n in nodes:
            n.kill()
        for llm in llms:
            llm.stop()
    print(f"scenario took {time.monotonic() - started:.1f} s; offer to wake job {created - offer_at} ms")


# --- in-process: the MVP points that need no mesh ------------------------------------------------


class FakeWakes:
    """The cycle's wake slot as the reactor sees it: records each wake, ends it at once."""

    def __init__(self):
        self.runs: list[tuple[str, str]] = []
        self.settled: list[str] = []

    async def run(self, job_id: str, context_md: str, *, max_ticks: int, max_runtime_s: float,
                  still_pending=None):
        if still_pending is not None and not await still_pending():  # as cognition/wake.py: no LLM call
            self.settled.append(job_id)
            return "settled", None
        self.runs.append((job_id, context_md))
        return "ok", None


class FakeCycle:
    def __init__(self):
        self.wakes = FakeWakes()


async def _service(home: Path, key, values: dict, cycle=None, clock=None, llm: bool = True):
    """A reactor over a real store; ``llm``: with an LLM registered (the agent thinks: it is woken),
    else none (its signals go to the person's inbox, issue 35)."""
    from meshnode.base.config import DEFAULTS
    from meshnode.base.metrics import Metrics
    from meshnode.engines.reactor.service import ReactorService, reactor_config
    from meshnode.records.mind import registry
    from meshnode.store import Store

    store = await Store.open(home / "data" / "meshnode.db")
    if llm:
        await store.write(registry.add, registry.Endpoint("main", "http://127.0.0.1:9/v1", "test-model"))
    cfg = reactor_config({**DEFAULTS["reactor"], **values}, key.did)
    kwargs = {"clock": clock} if clock is not None else {}
    return store, ReactorService(store, key, cfg, home, Metrics(), cycle=cycle, **kwargs)


def _person_note(store, key, text: str):
    from meshnode.base.container import now_ms
    from meshnode.domain.notes import make_note

    note = make_note(key, text, now_ms=now_ms(), source="cli")
    return store.write(lambda db: db.put_container(note, received_at_ms=now_ms(), local={"tags": []}))


def test_aliases_are_normalized_unknown_addressees_reported_and_the_digest_goes_to_one_agent(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()
    (tmp_path / "reactor").mkdir()
    (tmp_path / "reactor" / "aliases.toml").write_text('[agents.self]\naliases = ["ductor", "Nodus"]\n')

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {}, cycle)
        try:
            await _person_note(store, key, "@Ductor could you look at the pump in the cellar?")
            await _person_note(store, key, "@somebody-else please water the plants today?")
            notes_before = await store.read(lambda db: db.conn.execute("SELECT count(*) FROM notes").fetchone()[0])
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                summary = await service.scan()
            assert [j["agent"] for j in summary["jobs"]] == [key.did], summary  # the alias's canonical id
            assert len(cycle.wakes.runs) == 1 and "pump" in cycle.wakes.runs[0][1]
            actions = {d["action"] for d in summary["decisions"]}
            assert "unknown_agent" in actions, summary
            from meshnode.records.reactor import audit
            unknown = await store.read(audit.unknown)
            assert any("somebody-else" in json.dumps(u) for u in unknown), unknown
            assert "water the plants" not in cycle.wakes.runs[0][1]  # never routed, never guessed
            # the digest went to one agent's wake: no note, let alone a topic note for all, was written
            notes_after = await store.read(lambda db: db.conn.execute("SELECT count(*) FROM notes").fetchone()[0])
            assert notes_after == notes_before
        finally:
            await store.aclose()

    trio.run(main)


def test_five_agents_needing_a_wake_over_the_budget_wake_only_the_coordinator(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()
    names = [f"agent{i}" for i in range(5)]
    external = {n: {"command": ["/bin/false"], "timeout_seconds": 5} for n in names}

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {"max_jobs_per_scan": 3, "external": external}, cycle)
        try:
            for n in names:
                await _person_note(store, key, f"@{n} would you review the plan for the {n} bridge?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                summary = await service.scan()
            assert [j["agent"] for j in summary["jobs"]] == [key.did], summary  # the coordinator alone
            assert len(cycle.wakes.runs) == 1
            digest = cycle.wakes.runs[0][1]
            assert all(f"{n} bridge" in digest for n in names), digest
            assert sum(d["action"] == "routed_coordinator" for d in summary["decisions"]) >= 5 - 1, summary
        finally:
            await store.aclose()

    trio.run(main)


def test_a_wake_without_trace_goes_to_the_operator_once_when_there_is_no_mentor(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()

    async def main():
        cycle = FakeCycle()  # the core "runs" and leaves nothing behind
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 0}, cycle)
        try:
            await _person_note(store, key, "could you call the plumber about the leak before noon?")
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for _ in range(4):  # wake, run ended -> check, traces found -> failed -> escalation, quiet
                    await service.scan()
            assert len(cycle.wakes.runs) == 1
            notes = await store.read(_operator_notes)
            assert len(notes) == 1, notes
            text, priority, source, audience = notes[0]
            assert (priority, source, audience) == (2, "system", "private") and "dedupe: esc:operator:" in text
        finally:
            await store.aclose()
        # a restart: a new service over the same rows sends nothing again, wakes nobody again
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, {"trace_grace_seconds": 0}, cycle)
        try:
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                for _ in range(2):
                    await service.scan()
            assert cycle.wakes.runs == [] and len(await store.read(_operator_notes)) == 1
        finally:
            await store.aclose()

    trio.run(main)


def test_the_scan_after_an_offer_arrives_wakes_its_candidate(tmp_path):
    """What the scenario above sees across processes as "woken within a scan of the offer's
    arrival", on a clock the test moves: a scan before the offer wakes nobody, the next scan after
    it writes the wake job at that scan's time and runs it, and later scans do not wake again."""
    from gmp_fixtures import A, B, World

    world = World()
    clock = [world.t]

    async def main():
        cycle = FakeCycle()
        store, service = await _service(tmp_path, B, {}, cycle, clock=lambda: clock[0])
        try:
            def put(c):
                return store.write(lambda db: db.put_container(c, received_at_ms=clock[0], local=None))

            goal = world.ok(world.goal(key=A))
            task = world.ok(world.task(goal))
            for c in (goal, task):
                await put(c)
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                assert (await service.scan())["jobs"] == [] and cycle.wakes.runs == []  # nothing offered yet
                clock[0] = world.tick(1000)
                offer = world.ok(world.offer(task.did, task, to=(B,)))
                await put(offer)  # arrives between two scans
                clock[0] = world.tick(1000)
                summary = await service.scan()
                assert [j["agent"] for j in summary["jobs"]] == [B.did], summary
                [(job_id, created, events)] = await store.read(lambda db: db.conn.execute(
                    "SELECT job_id, created_ms, events FROM reactor_jobs").fetchall())
                assert created == clock[0] and f"offer:{task.did}:{offer.did}" in events, (created, events)
                assert [run[0] for run in cycle.wakes.runs] == [job_id]
                for _ in range(2):
                    clock[0] = world.tick(1000)
                    assert (await service.scan())["jobs"] == []
            assert len(cycle.wakes.runs) == 1
        finally:
            await store.aclose()

    trio.run(main)


def _operator_notes(db) -> list[tuple]:
    return db.conn.execute("SELECT text, priority, source, audience FROM notes WHERE topic = ?",
                           (ESCALATION_TOPIC,)).fetchall()


def test_two_concurrent_one_shot_scans_wake_an_external_agent_once(tmp_path, run_cli, home):
    import subprocess
    import sys

    from clienv import cli_env

    agent = "import time; open('ran', 'w').write('1'); time.sleep(1); print('{\"processed_messages\": []}')"
    with open(home / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[reactor.external.scout]\ncommand = ["python3", "-c", {json.dumps(agent)}]\n'
                'timeout_seconds = 20\n')
    assert run_cli("--home", home, "note", "add", "@scout would you review the plan for the bridge?").returncode == 0
    argv = [sys.executable, "-m", "meshnode", "--home", str(home), "reactor", "scan", "--once", "--json"]
    procs = [subprocess.Popen(argv, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    ran = sorted((home / "reactor" / "wake").glob("*/ran"))
    assert len(ran) == 1, (ran, results)  # a lease per agent: one of the two scans woke scout


def test_a_lease_held_elsewhere_skips_the_wake_until_released(tmp_path, run_cli, home):
    import socket

    from meshnode.base.container import now_ms
    from meshnode.records.reactor import leases
    from meshnode.engines.reactor.service import machine_boot_ms
    from meshnode.store import Database

    agent = "open('ran', 'w').write('1')"
    with open(home / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[reactor.external.scout]\ncommand = ["python3", "-c", {json.dumps(agent)}]\n')
    db = Database(home / "data" / "meshnode.db", create=False)
    try:  # another live process of this host (a concurrent `scan --once`) is waking scout
        assert leases.take_lease(db, "scout", "wake-elsewhere", f"1@{socket.gethostname()}:{machine_boot_ms()}",
                                  now_ms(), now_ms() + 60_000)
    finally:
        db.close()
    assert run_cli("--home", home, "note", "add", "@scout would you review the plan for the bridge?").returncode == 0
    no_cooldown = {"MESHNODE_REACTOR_WAKE_COOLDOWN_HOURS": "0"}  # scout may be woken again at once
    scan = json.loads(run_cli("--home", home, "reactor", "scan", "--once", "--json", env=no_cooldown).stdout)
    assert [j["agent"] for j in scan["jobs"]] == ["scout"] and scan["started"] == [], scan
    listed = json.loads(run_cli("--home", home, "reactor", "jobs", "--json").stdout)
    assert [j["status"] for j in listed] == ["skipped"], listed
    assert not list((home / "reactor" / "wake").glob("*/ran"))
    released = run_cli("--home", home, "reactor", "release", "wake-elsewhere")
    assert released.returncode == 0 and "released" in released.stdout
    assert run_cli("--home", home, "note", "add", "@scout and the second part of the plan, please?").returncode == 0
    again = json.loads(run_cli("--home", home, "reactor", "scan", "--once", "--json", env=no_cooldown).stdout)
    assert len(again["started"]) == 1, again
    assert len(list((home / "reactor" / "wake").glob("*/ran"))) == 1


def test_a_dead_peer_reaches_its_mentor_once_across_a_restart(tmp_path):
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey

    key, peer, mentor = NodeKey.generate(), NodeKey.generate().did, NodeKey.generate().did
    values = {"quiet_hours": 0.0001, "stale_hours": 0.0002, "dead_hours": 0.0003, "mentors": {peer: mentor}}

    def heard_long_ago(db):  # what the node's liveness recorded before this start: silent for an hour
        from meshnode.base.identity.did import did_to_peer_id
        from meshnode.store.peers import upsert_peer

        upsert_peer(db, peer, peer_id=did_to_peer_id(peer), now_ms=now_ms(), source="exchange")
        with db.transaction() as conn:
            conn.execute("INSERT INTO peer_liveness (did, state, last_heard_ms, last_seq, changed_at_ms)"
                         " VALUES (?, 'dead', ?, 1, ?)", (peer, now_ms() - 3_600_000, now_ms()))

    async def main():
        for run in range(2):  # the second service is the node restarted over the same rows
            store, service = await _service(tmp_path, key, values, FakeCycle())
            try:
                if run == 0:
                    await store.write(heard_long_ago)
                async with trio.open_nursery() as nursery:
                    service._nursery = nursery
                    for _ in range(2):
                        await service.scan()
                notes = await store.read(_operator_notes)
                assert len(notes) == 1, notes  # one note, to the mentor (stored here; pushed by a node's mesh)
                text, priority, source, audience = notes[0]
                assert audience == "friends" and peer in text and f"dedupe: esc:mentor:{peer}:" in text, text
                recipients = await store.read(lambda db: db.conn.execute(
                    "SELECT recipient FROM container_recipients WHERE did = (SELECT container_did FROM notes"
                    " WHERE topic = ?)", (ESCALATION_TOPIC,)).fetchall())
                assert recipients == [(mentor,)]  # addressed to the mentor alone
            finally:
                await store.aclose()

    trio.run(main)


class BlockedWakes(FakeWakes):
    """A wake that never ends by itself (the node is stopped while it runs)."""

    def __init__(self):
        super().__init__()
        self.started = trio.Event()

    async def run(self, job_id: str, context_md: str, *, max_ticks: int, max_runtime_s: float,
                  still_pending=None):
        self.runs.append((job_id, context_md))
        self.started.set()
        await trio.sleep_forever()


def test_a_run_cut_by_a_stop_is_interrupted_and_its_event_woken_again_at_the_next_start(tmp_path):
    from meshnode.base.identity.keys import NodeKey

    key = NodeKey.generate()
    values = {"wake_cooldown_hours": 0, "scan_seconds": 0.05}

    async def main():
        cycle = FakeCycle()
        cycle.wakes = BlockedWakes()
        store, service = await _service(tmp_path, key, values, cycle)
        try:
            await _person_note(store, key, "could you renew the certificate of the web server soon?")
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                with trio.fail_after(10):
                    await cycle.wakes.started.wait()
                nursery.cancel_scope.cancel()  # the node stops mid-run
            first = cycle.wakes.runs[0][0]
        finally:
            await store.aclose()
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, values, cycle)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                with trio.fail_after(10):
                    while not cycle.wakes.runs:
                        await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
            status = await store.read(lambda db: db.conn.execute(
                "SELECT status FROM reactor_jobs WHERE job_id = ?", (first,)).fetchone()[0])
            assert status == "interrupted" and cycle.wakes.runs[0][0] != first
            assert "certificate" in cycle.wakes.runs[0][1]  # the same event, back to pending once
        finally:
            await store.aclose()

    trio.run(main)


def test_a_plug_in_s_lines_count_and_three_failed_runs_reach_the_person(tmp_path):
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey

    key, t = NodeKey.generate(), [now_ms()]
    monitor = ("import json, sys\n"
               "print(json.dumps({'event_type': 'disk', 'subject': 'sda', 'dedupe_key': 'disk-sda', 'severity': 'P1',"
               " 'summary': 'disk sda 97 % full', 'owner': 'self'}))\n"
               "print('not json')\n"
               "sys.exit(3)\n")
    values = {"adapters": {"mon": {"command": ["python3", "-c", monitor], "every_seconds": 1}}}

    async def main():
        store, service = await _service(tmp_path, key, values, FakeCycle(), clock=lambda: t[0])
        try:
            async with trio.open_nursery() as nursery:
                service._nursery = nursery
                first = await service.scan()
                for _ in range(2):
                    t[0] += 2000  # the next run is due
                    await service.scan()
            assert [j["events"] for j in first["jobs"]] == [["ext:mon:disk-sda"]], first  # capped at P2, woken
            assert first["jobs"][0]["priority"] == 2
            m = service.metrics
            assert (m.get("reactor_adapter_lines_total", adapter="mon", result="valid"),
                    m.get("reactor_adapter_lines_total", adapter="mon", result="invalid")) == (3, 3)
            assert service.plugin_runs["mon"]["first_error"]
            notes = await store.read(_operator_notes)
            assert len(notes) == 1 and "adapter.failed" in notes[0][0] and notes[0][1] == 2, notes
        finally:
            await store.aclose()

    trio.run(main)


def test_a_woken_agent_may_not_broadcast_nor_send_past_the_run_and_thread_limits():
    from meshnode.base.identity.keys import NodeKey
    from meshnode.base.metrics import Metrics
    from meshnode.engines.reactor.aliases import AliasRegistry
    from meshnode.engines.reactor.core import Reactor
    from meshnode.engines.reactor.send_limits import WakeSendLimits, WakeSendRefused
    from meshnode.engines.reactor.service import reactor_config
    from meshnode.base.config import DEFAULTS

    me, bob, carol = (NodeKey.generate().did for _ in range(3))
    cfg = reactor_config({**DEFAULTS["reactor"], "thread_messages_per_hour": 2, "max_outgoing_per_run": 3}, me)
    core = Reactor(cfg, AliasRegistry({}, self_id=me))

    class Wakes:
        focus, job = None, "wake-1"

        def status(self):
            return {"job_id": self.job}

    sent = []
    wakes, metrics = Wakes(), Metrics()
    limits = WakeSendLimits(me, cfg.max_outgoing_per_run, lambda: 1_800_000_000_000, lambda: core, metrics)

    def send(tool, args):
        limits.check(wakes, tool, args)
        sent.append((tool, args.get("to") or args.get("audience")))

    def main():
        public = {"text": "hello all", "audience": "public"}
        send("note_add", public)  # outside a wake: the gate's rules only
        wakes.focus = "## Wake ..."
        for tool, args, refused in (("note_add", public, "broadcast"),
                                    ("send_message", {"to": bob, "text": "a"}, None),
                                    ("send_message", {"to": bob, "text": "b"}, None),
                                    ("send_message", {"to": bob, "text": "c"}, "per_thread"),  # 2 an hour
                                    ("send_message", {"to": carol, "text": "d"}, None),
                                    ("send_message", {"to": carol, "text": "e"}, "per_run")):  # 3 a run
            try:
                send(tool, args)
                assert refused is None, (tool, args)
            except WakeSendRefused as exc:
                assert refused is not None and metrics.get("reactor_sends_refused_total", limit=refused), exc
        assert [to for _, to in sent] == ["public", bob, bob, carol]
        wakes.job = "wake-2"  # a new run starts its own count
        send("send_message", {"to": carol, "text": "f"})

    main()


def test_a_lease_left_by_a_killed_process_of_this_boot_frees_its_job_when_it_expires(tmp_path):
    from meshnode.base.container import now_ms
    from meshnode.base.identity.keys import NodeKey
    from meshnode.engines.reactor.service import holder_id

    key = NodeKey.generate()
    values = {"wake_cooldown_hours": 0, "scan_seconds": 0.05}

    async def main():
        cycle = FakeCycle()
        cycle.wakes = BlockedWakes()
        store, service = await _service(tmp_path, key, values, cycle)
        try:
            await _person_note(store, key, "could you rotate the logs of the mail server today?")
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)
                with trio.fail_after(10):
                    await cycle.wakes.started.wait()
                nursery.cancel_scope.cancel()
            first = cycle.wakes.runs[0][0]

            def as_if_killed(db):  # kill -9: the run's row and lease stay, the lease for a little longer
                with db.transaction() as conn:
                    conn.execute("UPDATE reactor_jobs SET status = 'running' WHERE job_id = ?", (first,))
                    conn.execute("INSERT INTO reactor_leases (agent, job_id, holder, expires_ms) VALUES (?, ?, ?, ?)",
                                 (key.did, first, "1" + holder_id()[holder_id().index("@"):], now_ms() + 500))
            await store.write(as_if_killed)
        finally:
            await store.aclose()
        cycle = FakeCycle()
        store, service = await _service(tmp_path, key, values, cycle)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(service.run)  # the lease is live at start: the job is left alone
                assert await store.read(lambda db: db.conn.execute(
                    "SELECT status FROM reactor_jobs WHERE job_id = ?", (first,)).fetchone()[0]) == "running"
                with trio.fail_after(10):
                    while not cycle.wakes.runs:  # once it has expired, the event is woken again
                        await trio.sleep(0.02)
                nursery.cancel_scope.cancel()
            assert "rotate the logs" in cycle.wakes.runs[0][1]
        finally:
            await store.aclose()

    trio.run(main)
