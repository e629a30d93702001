"""Metrics: counters (unchanged), histograms over fixed buckets, gauges."""

import json
import time

import httpx
import pytest
import trio
import trio.testing

from meshnode.engines.cognition import llm
from meshnode.base.metrics import BUCKETS, Metrics
from meshnode.store import Store


def test_snapshot_is_counters_only_and_unchanged():
    m = Metrics()
    m.inc("a")
    m.inc("a", 2, peer="x")
    m.observe("t_seconds", 0.2)
    m.set("g", 3)
    assert m.snapshot() == [{"name": "a", "labels": {}, "value": 1},
                            {"name": "a", "labels": {"peer": "x"}, "value": 2}]
    assert m.get("a") == 3 and m.get("a", peer="x") == 2


def test_histogram_buckets_are_cumulative_and_le_inclusive():
    m = Metrics()
    for v in (0.001, 0.005, 0.3, 0.3, 200.0):
        m.observe("llm_request_seconds", v, llm="x", role="main")
    m.observe("llm_request_seconds", 1.0, llm="y", role="main")
    [h, other] = m.histograms()
    assert h["labels"] == {"llm": "x", "role": "main"} and other["labels"]["llm"] == "y"
    buckets = dict((le, n) for le, n in h["buckets"])
    assert [le for le, _ in h["buckets"]] == list(BUCKETS)
    assert buckets[0.005] == 2          # 0.001 and exactly 0.005
    assert buckets[0.25] == 2 and buckets[0.5] == 4
    assert buckets[120] == 4 and h["count"] == 5   # 200 s is only in +Inf (the count)
    assert abs(h["sum"] - 200.606) < 1e-9
    counts = [n for _, n in h["buckets"]]
    assert counts == sorted(counts)
    json.dumps(m.histograms(), allow_nan=False)   # plain JSON for the control channel


def test_negative_durations_count_as_zero():
    m = Metrics()
    m.observe("x", -1)
    assert m.histograms()[0]["buckets"][0][1] == 1 and m.histograms()[0]["sum"] == 0


def test_gauge_keeps_the_last_value_per_labels():
    m = Metrics()
    m.set("reactor_scan_ms", 13.5)
    m.set("reactor_scan_ms", 2)
    m.set("queue", 4, kind="a")
    assert m.gauges() == [{"name": "queue", "labels": {"kind": "a"}, "value": 4.0},
                          {"name": "reactor_scan_ms", "labels": {}, "value": 2.0}]
    assert m.gauge("reactor_scan_ms") == 2.0 and m.gauge("nothing") is None


# --- llm_request_seconds (cognition/llm.py) ------------------------------------------------------


def _client(status: int) -> httpx.AsyncClient:
    def answer(request):
        if status != 200:
            return httpx.Response(status)
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "hi"}}]})
    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


async def test_llm_call_is_observed_with_its_role():
    m = Metrics()
    main = llm.Endpoint("m1", "http://127.0.0.1:9/v1", "x")
    judge = llm.Endpoint("v1", "http://127.0.0.1:9/v1", "x", validator=True)
    async with _client(200) as c:
        assert await llm.chat(main, [], client=c, metrics=m) == "hi"
        await llm.chat(main, [], client=c, metrics=m, role="assess")
        await llm.chat(judge, [], client=c, metrics=m)
    seen = {(h["labels"]["llm"], h["labels"]["role"]): h["count"] for h in m.histograms()}
    assert seen == {("m1", "main"): 1, ("m1", "assess"): 1, ("v1", "validator"): 1}


async def test_llm_failure_is_observed_too_and_the_context_variable_is_used():
    m = Metrics()
    main = llm.Endpoint("m1", "http://127.0.0.1:9/v1", "x")
    token = llm.METRICS.set(m)
    try:
        async with _client(400) as c:
            with pytest.raises(llm.LLMError):
                await llm.chat(main, [], client=c, retries=0)
    finally:
        llm.METRICS.reset(token)
    assert [(h["name"], h["count"]) for h in m.histograms()] == [("llm_request_seconds", 1)]
    async with _client(200) as c:
        await llm.chat(main, [], client=c)   # no registry: nothing observed, nothing fails
    assert m.histograms()[0]["count"] == 1


# --- store_write_wait_seconds (store/service.py) -------------------------------------------------


async def test_store_write_wait_is_the_queue_behind_another_write(tmp_path):
    m = Metrics()
    async with await Store.open(tmp_path / "n.db", metrics=m) as store:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, lambda db: time.sleep(0.2))  # a slow write holds the writer
            await trio.testing.wait_all_tasks_blocked()
            await store.write(lambda db: None)                          # queued behind it
        await store.read(lambda db: None)
    [h] = m.histograms()
    assert h["name"] == "store_write_wait_seconds" and h["count"] == 2
    assert h["sum"] >= 0.15   # the second write waited for the first


async def test_store_without_metrics_measures_nothing(tmp_path):
    async with await Store.open(tmp_path / "n.db") as store:
        assert await store.write(lambda db: 7) == 7


# --- control_request_seconds and the control command "metrics" (node.py) -----------------------------

async def test_control_requests_are_timed_and_metrics_full_adds_histograms_and_gauges():
    from meshnode.node.run import _Control
    m = Metrics()
    m.set("reactor_scan_ms", 13.5)
    control = _Control(None, None, None, None, m)
    counters = await control.handle("metrics", {})
    assert isinstance(counters, list) and counters == m.snapshot()[:len(counters)]   # as `meshnode metrics` prints
    full = await control.handle("metrics", {"full": True})
    assert set(full) == {"counters", "histograms", "gauges"}
    assert full["gauges"] == [{"name": "reactor_scan_ms", "labels": {}, "value": 13.5}]
    assert [(h["labels"]["cmd"], h["count"]) for h in full["histograms"]] == [("metrics", 1)]
    json.dumps(full, allow_nan=False)
    assert [(h["labels"]["cmd"], h["count"]) for h in m.histograms()] == [("metrics", 2)]
