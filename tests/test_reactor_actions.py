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
