"""Metrics: counters (unchanged), histograms over fixed buckets, gauges."""

import json

from meshnode.metrics import BUCKETS, Metrics


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
