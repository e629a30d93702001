"""The reactor over HTTP (meshnode/faces/web/api_reactor.py): status, a dry-run scan that writes nothing,
the event and job a note for the agent makes, explain, rules and aliases as the CLI shows them,
and the refusals (no lease: 404; the reactor off: 409)."""

from __future__ import annotations

import time

import pytest

from meshharness import wait_until
from meshnode.records.reactor import leases
from meshnode.store import Database
from webharness import refused, web_node


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("reactor")) as node:
        yield node


def test_status_and_a_dry_run_scan_that_writes_nothing(web):
    status = web.get("/api/reactor")
    assert status["enabled"] is True and status["node"] == "running" and "pending" in status
    before = (web.get("/api/reactor/events", all="true"), web.get("/api/reactor/jobs"))
    dry = web.post("/api/reactor/scan", {"dry_run": True})
    assert dry["dry_run"] is True and "decisions" in dry
    assert (web.get("/api/reactor/events", all="true"), web.get("/api/reactor/jobs")) == before
    refused(web.raw_post("/api/reactor/scan", {"dry_run": "yes"}), 400, "bad_arguments")


def test_a_note_for_the_agent_becomes_an_event_and_a_job(web):
    # an LLM configured (it answers nothing here): the agent is woken, not off (issue 35)
    web.node.cli("llm", "add", "main", "--url", "http://127.0.0.1:9/v1", "--model", "m")
    web.node.cli("note", "add", "could you check the fuses in the barn before friday?")
    jobs = wait_until(lambda: web.get("/api/reactor/jobs"), 30, "a wake job for the note")
    job_id = jobs[0]["job_id"]
    events = web.get("/api/reactor/events", limit=10)
    assert events and events[0]["job_id"] == job_id, events
    assert web.get("/api/reactor/events", type="no.such.type") == []
    assert [j["job_id"] for j in web.get("/api/reactor/jobs", status=jobs[0]["status"])] == [job_id]
    job = web.get(f"/api/reactor/jobs/{job_id}")
    assert job["job_id"] == job_id and job["decisions"] and job["event_rows"]
    explained = web.get(f"/api/reactor/explain/{events[0]['dedupe_key']}")
    assert explained["kind"] == "event" and [d["job_id"] for d in explained["decisions"]][-1] == job_id
    assert web.get(f"/api/reactor/explain/{job_id}")["kind"] == "job"
    # the same rows as the CLI reads
    assert web.cli_json("reactor", "jobs")[0]["job_id"] == job_id

    # a lease left by a driver that died (written as another process would), dropped by hand
    assert job["lease"] is None
    refused(web.raw_post(f"/api/reactor/jobs/{job_id}/release"), 404, "not_found")
    db = Database(web.home / "data" / "meshnode.db")
    try:
        now = time.time_ns() // 1_000_000
        assert leases.take_lease(db, job["agent"], job_id, "1@elsewhere:1", now, now + 600_000)
    finally:
        db.close()
    assert web.get(f"/api/reactor/jobs/{job_id}")["lease"]["holder"] == "1@elsewhere:1"
    assert web.post(f"/api/reactor/jobs/{job_id}/release") == {"job": job_id, "released": True}
    assert web.get(f"/api/reactor/jobs/{job_id}")["lease"] is None
    refused(web.raw_post(f"/api/reactor/jobs/{job_id}/release"), 404, "not_found")


def test_rules_and_aliases_as_the_cli_shows_them(web):
    rules = web.get("/api/reactor/rules")
    assert rules == web.cli_json("reactor", "rules")
    assert {"direct_note", "offer", "person", "ext"} <= {r["rule"] for r in rules}
    aliases = web.get("/api/reactor/aliases")
    assert aliases == web.cli_json("reactor", "aliases")
    assert [a["self"] for a in aliases] == [True]
    assert isinstance(web.get("/api/reactor/aliases", unknown="true"), list)


def test_refusals(web):
    before = (web.get("/api/reactor/jobs"), web.get("/api/reactor"))
    assert "no-such-job" in refused(web.raw_post("/api/reactor/jobs/no-such-job/release"), 404, "not_found")
    refused(web.raw_get("/api/reactor/explain/nothing-here"), 404, "not_found")
    refused(web.raw_get("/api/reactor/jobs", status="sleeping"), 400, "bad_arguments")
    refused(web.raw_get("/api/reactor/events", limit="0"), 400, "bad_arguments")
    refused(web.raw_get("/api/reactor/events", colour="red"), 400, "bad_arguments")
    assert web.get("/api/reactor/jobs") == before[0]


def test_reactor_off(tmp_path):
    with web_node(tmp_path, env={"MESHNODE_REACTOR_ENABLED": "false"}) as off:
        assert off.get("/api/reactor")["enabled"] is False
        assert "off" in refused(off.raw_post("/api/reactor/scan", {}), 409, "reactor_off")
        assert off.get("/api/reactor/rules")


def test_cooldowns_listed_and_lifted_over_http(web):
    rows = web.get("/api/reactor/cooldowns")
    assert isinstance(rows, list) and all(r["limit"] in ("wake", "nudge", "message") for r in rows)
    refused(web.raw_post("/api/reactor/cooldowns/clear", {}), 400, "bad_request")
    refused(web.raw_post("/api/reactor/cooldowns/clear", {"key": "esc:x:y"}), 400, "bad_request")
    refused(web.raw_post("/api/reactor/cooldowns/clear", {"key": "wake:nobody:offer"}), 404, "not_found")
    assert web.post("/api/reactor/cooldowns/clear", {"all": True}) == {"lifted": sorted(r["key"] for r in rows),
                                                                       "all": True}
    assert web.get("/api/reactor/cooldowns") == []
