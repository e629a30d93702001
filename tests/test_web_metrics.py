"""/metrics: the exposition of a node's counters, histograms, gauges and state (protocols/web.md 8.2)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from meshnode.base.metrics import Metrics
from meshnode.store.database import Database
from meshnode.faces.web import prom
from webharness import web_node


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _fake_services(metrics: Metrics):
    return SimpleNamespace(metrics=metrics, key=SimpleNamespace(did="did:hmp:x"),
                           config=SimpleNamespace(name="n1"), store=SimpleNamespace(version=18),
                           mesh=SimpleNamespace(peers_snapshot=lambda: {"connected": ["a", "b"]}),
                           cycle=SimpleNamespace(status=lambda: {"mode": "idle", "ticks": 4, "idle": True}),
                           feed=SimpleNamespace(streams=2))


def test_exposition_of_counters_histograms_gauges_and_state(tmp_path):
    m = Metrics()
    m.inc("containers_refused", 2, reason="too big")
    m.inc("containers_refused", reason="bad-sig")
    m.inc("reactor_jobs_total", agent="x", status="started")   # already _total: one suffix
    m.inc("sync_sessions")
    m.observe("llm_request_seconds", 0.3, llm="m1", role="main")
    m.observe("llm_request_seconds", 200, llm="m1", role="main")
    m.set("reactor_scan_ms", 13.5)
    db = Database(tmp_path / "p.db")
    try:
        stored = prom.store_gauges(db, 0)
    finally:
        db.close()
    fams = _families(prom.exposition(_fake_services(m), stored).decode())
    refused = {s.labels["reason"]: s.value for s in fams["meshnode_containers_refused"].samples}
    assert fams["meshnode_containers_refused"].type == "counter" and refused == {"too big": 2, "bad-sig": 1}
    assert [s.name for s in fams["meshnode_reactor_jobs"].samples] == ["meshnode_reactor_jobs_total"]
    h = fams["meshnode_llm_request_seconds"]
    assert h.type == "histogram"
    by = {(s.name, s.labels.get("le")): s.value for s in h.samples}
    assert by[("meshnode_llm_request_seconds_bucket", "0.5")] == 1
    assert by[("meshnode_llm_request_seconds_bucket", "+Inf")] == 2
    assert by[("meshnode_llm_request_seconds_count", None)] == 2 and by[("meshnode_llm_request_seconds_sum", None)] == 200.3
    assert fams["meshnode_reactor_scan_ms"].type == "gauge" and fams["meshnode_reactor_scan_ms"].samples[0].value == 13.5
    assert fams["meshnode_up"].samples[0].value == 1
    assert fams["meshnode_info"].samples[0].labels == {"did": "did:hmp:x", "name": "n1", "version": "0.1.0",
                                                      "schema": "18"}
    assert fams["meshnode_peers_connected"].samples[0].value == 2
    modes = {s.labels["mode"]: s.value for s in fams["meshnode_cycle_mode"].samples}
    assert modes["idle"] == 1 and sum(modes.values()) == 1
    assert fams["meshnode_cycle_idle"].samples[0].value == 1
    assert fams["meshnode_web_sse_streams"].samples[0].value == 2
    assert {s.labels["table"] for s in fams["meshnode_store_rows"].samples} >= {"containers", "notes"}
    assert not any(name.startswith(("process_", "python_")) for name in fams)   # no global collectors


def test_a_name_clash_keeps_the_first_family_and_stays_parseable():
    m = Metrics()
    m.inc("up")                       # a counter named like the state gauge
    m.set("sync_sessions", 3)         # a gauge named like a counter
    m.inc("sync_sessions")
    stored = {"counts": {}, "held": {"count": 0, "released_waiting": 0}, "unread": 0, "drafts_open": 0,
              "confirmations_pending": 0, "tasks": {}, "tasks_overdue": 0, "reactor_jobs": {}, "peers_known": 0}
    fams = _families(prom.exposition(_fake_services(m), stored).decode())
    assert fams["meshnode_sync_sessions"].type == "counter"


# --- over HTTP ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("prom")) as w:
        yield w


def _scrape(web) -> dict:
    r = web.raw_get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    return _families(r.text)


def test_metrics_parses_and_has_every_counter_of_the_metrics_command(web):
    web.node.call("note_add", {"text": "count me"})
    counters = web.node.call("metrics")
    assert counters, "the node counted nothing"
    fams = _families(web.raw_get("/metrics").text)
    samples = {(s.name, tuple(sorted(s.labels.items()))) for f in fams.values() for s in f.samples}
    for c in counters:
        base = c["name"][:-6] if c["name"].endswith("_total") else c["name"]
        assert (f"meshnode_{base}_total", tuple(sorted(c["labels"].items()))) in samples, c
    assert fams["meshnode_up"].samples[0].value == 1


def test_histogram_counts_grow(web):
    def count(fams) -> float:
        return sum(s.value for s in fams["meshnode_control_request_seconds"].samples
                   if s.name.endswith("_count") and s.labels["cmd"] == "status")
    web.node.call("status")
    before = count(_scrape(web))
    for _ in range(3):
        web.node.call("status")
    assert count(_scrape(web)) == before + 3


def test_metrics_needs_credentials_by_default(web):
    with web.client(bearer=False) as anonymous:
        r = anonymous.get("/metrics")
    assert r.status_code == 401 and "meshnode_" not in r.text


def test_metrics_full_over_the_control_socket(web):
    full = web.node.call("metrics", {"full": True})
    assert set(full) == {"counters", "histograms", "gauges"}
    assert any(h["name"] == "control_request_seconds" for h in full["histograms"])
