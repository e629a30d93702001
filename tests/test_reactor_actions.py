"""What the reactor stored, and a lease dropped by hand, as actions (app.actions.reactor): the
reads are records.reactor.audit's as ``meshnode reactor ...`` prints them, with or without a node;
a lease is the person's or the node's to drop, never the agent's nor an outside party's."""

from __future__ import annotations

import json

import pytest

from meshnode.app import actor
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.engines.reactor import persist
from meshnode.engines.reactor.core import Reactor
from meshnode.records.reactor import audit, leases
from meshnode.store import Database
from meshnode.store.service import Store

from test_reactor_store import ALIASES, CFG, HOLDER, ME, T, stream


def _steps(db) -> str:
    """The stream's events stored, and one job's lease held; the job's id."""
    step = Reactor(CFG, ALIASES).step(T, stream())
    persist.save_step(db, step, T)
    job = step.jobs[0]
    assert leases.take_lease(db, job.agent, job.job_id, HOLDER, T, T + 600_000)
    return job.job_id


@pytest.fixture
async def stored(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        job_id = await store.write(_steps)
        yield App(store, None, clock=lambda: T + 1), job_id


async def test_only_the_person_or_the_node_drops_a_lease(stored):
    app, job_id = stored
    for who in (actor.AGENT, actor.AGENT_TASK, actor.a2a("k1", "bob"), actor.peer("did:key:zPeer")):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, who, "reactor_release", {"job": job_id})
        assert info.value.code == "not_allowed", who
    assert (await app.store.read(audit.job, job_id))["lease"]["holder"] == HOLDER  # still held
    assert await dispatch(app, person("web"), "reactor_release", {"job": job_id}) == {"job": job_id,
                                                                                       "released": True}
    assert (await app.store.read(audit.job, job_id))["lease"] is None
    with pytest.raises(MeshnodeError) as info:  # none held any more
        await dispatch(app, actor.node("reactor"), "reactor_release", {"job": job_id})
    assert info.value.code == "not_found" and job_id in info.value.reason


async def test_the_reads_are_what_the_rows_say(stored):
    app, job_id = stored
    cli = person("cli")
    assert await dispatch(app, cli, "reactor_stored", {}) == await app.store.read(audit.status, T + 1)
    assert await dispatch(app, cli, "reactor_events", {"all": True}) == await app.store.read(audit.events, all=True)
    assert [e["dedupe_key"] for e in await dispatch(app, cli, "reactor_events", {"agent": "scout"})] == ["note:b"]
    leased = await dispatch(app, cli, "reactor_jobs", {"status": "leased"})
    assert [j["job_id"] for j in leased] == [job_id] and leased == await app.store.read(audit.jobs, status="leased")
    assert (await dispatch(app, cli, "reactor_job", {"id": job_id}))["job_id"] == job_id
    assert (await dispatch(app, cli, "reactor_explain", {"key": "note:a"}))["decisions"]
    assert await dispatch(app, cli, "reactor_unknown", {}) == await app.store.read(audit.unknown)
    for name, args, code in (("reactor_job", {"id": "wake-none"}, "no_job"),
                             ("reactor_explain", {"key": "nothing:here"}, "not_found")):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, cli, name, args)
        assert info.value.code == code


def test_the_cli_prints_the_actions_results_and_releases_once(run_cli, home):
    db = Database(home / "data" / "meshnode.db", create=False)
    try:
        job_id = _steps(db)
        want_events = audit.events(db, all=True)
        want_job = audit.job(db, job_id)
    finally:
        db.close()
    out = run_cli("--home", home, "reactor", "events", "--all", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == want_events
    out = run_cli("--home", home, "reactor", "jobs", "show", job_id, "--json")
    assert json.loads(out.stdout) == json.loads(json.dumps(want_job))
    out = run_cli("--home", home, "reactor", "release", job_id)
    assert (out.returncode, out.stdout) == (0, f"released the lease of {job_id}\n")
    out = run_cli("--home", home, "reactor", "release", job_id)
    assert (out.returncode, out.stderr) == (1, f"meshnode: no lease is held for job {job_id!r}\n")


# --- the cooldowns (issue 33): listed by this node's side, lifted by the person alone ---------


async def test_cooldowns_are_listed_and_only_the_person_lifts_them(stored):
    app, _job_id = stored
    rows = await dispatch(app, person("cli"), "reactor_cooldowns", {})
    wake = [r for r in rows if r["limit"] == "wake"]
    assert wake and all(r["until_ms"] > T + 1 and r["key"] == f"wake:{r['agent']}:{r['kind']}" for r in wake), rows
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, actor.a2a("k1", "bob"), "reactor_cooldowns", {})
    assert info.value.code == "not_allowed"
    key = wake[0]["key"]
    for who in (actor.AGENT, actor.node("reactor"), actor.a2a("k1", "bob"), actor.peer("did:key:zPeer")):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, who, "reactor_cooldown_clear", {"key": key})
        assert info.value.code == "not_allowed", who
    for args in ({}, {"key": key, "all": True}, {"key": "esc:scout:note:a"}, {"key": "int:note:a"}):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, person("web"), "reactor_cooldown_clear", args)
        assert info.value.code == "bad_request", args
    assert await dispatch(app, person("web"), "reactor_cooldown_clear", {"key": key}) == {"lifted": [key],
                                                                                          "all": False}
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, person("web"), "reactor_cooldown_clear", {"key": key})
    assert info.value.code == "not_found"
    out = await dispatch(app, person("mcp"), "reactor_cooldown_clear", {"all": True})
    assert out["lifted"] == sorted(r["key"] for r in rows if r["key"] != key)
    assert await dispatch(app, person("cli"), "reactor_cooldowns", {}) == []


class _Running:
    """A running reactor's part the actions call (ReactorService.lift_cooldowns)."""

    def __init__(self):
        self.asked = []

    async def lift_cooldowns(self, keys):
        self.asked.append(keys)
        return ["wake:x:offer"] if keys is None else list(keys)


async def test_a_running_reactor_is_asked_to_lift_them(stored):
    app, _job_id = stored
    app.reactor = running = _Running()
    assert (await dispatch(app, person("cli"), "reactor_cooldown_clear", {"all": True}))["lifted"] == ["wake:x:offer"]
    await dispatch(app, person("cli"), "reactor_cooldown_clear", {"key": "wake:x:task_due"})
    assert running.asked == [None, ["wake:x:task_due"]]


def test_the_cli_lists_and_clears_cooldowns(run_cli, home):
    db = Database(home / "data" / "meshnode.db", create=False)
    later = 4_000_000_000_000  # in force by the CLI's own clock
    try:
        with db.transaction() as conn:
            conn.executemany("INSERT INTO reactor_cooldowns (key, until_ms, count) VALUES (?, ?, 1)",
                             [("wake:scout:offer", later), ("nudge:L1:scout", later + 1), ("int:note:a", later)])
    finally:
        db.close()
    out = run_cli("--home", home, "reactor", "cooldowns", "--json")
    assert out.returncode == 0, out.stderr
    keys = [r["key"] for r in json.loads(out.stdout)]
    assert keys == ["wake:scout:offer", "nudge:L1:scout"]  # not the ladder's int: row
    out = run_cli("--home", home, "reactor", "cooldown", "clear")
    assert out.returncode != 0 and "usage" in out.stderr
    out = run_cli("--home", home, "reactor", "cooldown", "clear", keys[0])
    assert (out.returncode, out.stdout) == (0, f"lifted {keys[0]}\n"), out.stderr
    out = run_cli("--home", home, "reactor", "cooldown", "clear", "--all", "--json")
    assert json.loads(out.stdout)["lifted"] == keys[1:]
    out = run_cli("--home", home, "reactor", "cooldowns", "--json")
    assert json.loads(out.stdout) == []
