"""``GET /metrics``: the node in Prometheus' text format (protocols/web.md 8.2).

One ``NodeCollector`` on a private ``CollectorRegistry`` per request: no global registry and no
process collectors (several nodes may share a test process, and the process is not the node).
The counters, histograms and gauges of ``Metrics`` become ``meshnode_<name>_total``,
``meshnode_<name>_bucket/_sum/_count`` and ``meshnode_<name>``; the node's state (cycle, peers,
store, gate, tasks, reactor, feed) is added as gauges, the store's read first with one
``store.read(store_gauges)`` so that the collector itself never waits.
"""

from __future__ import annotations

import re

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric
from starlette.responses import Response

from meshnode import __version__
from meshnode.records.mind import held
from meshnode.base.metrics import BUCKETS
from meshnode.store.database import Database, sql_errors
from meshnode.store.peers import list_peers
from meshnode.faces.web.endpoint import Endpoint

PREFIX = "meshnode_"
OPEN_TASK = ("pending", "in_progress", "paused")
MODES = ("normal", "isolated", "idle", "core_outage", "off")


def store_gauges(db: Database, now_ms: int) -> dict:
    """What the exposition reads from the database (one reader-thread call)."""
    q = db.conn.execute
    counts = db.counts()
    with sql_errors("reading gauges for /metrics"):
        unread = q("SELECT count(*) FROM notes WHERE read = 0 AND hidden = 0").fetchone()[0]
        drafts = q("SELECT count(*) FROM gate_drafts WHERE status IN ('pending', 'accepted')").fetchone()[0]
        pending = q("SELECT count(*) FROM gate_confirmations WHERE status = 'pending'").fetchone()[0]
        tasks = dict(q("SELECT status, count(*) FROM tasks GROUP BY status").fetchall())
        overdue = q(f"SELECT count(*) FROM tasks WHERE status IN {OPEN_TASK!r} AND overdue_at_ms IS NOT NULL"
                    " AND overdue_at_ms <= ?", (now_ms,)).fetchone()[0]
        jobs = dict(q("SELECT status, count(*) FROM reactor_jobs GROUP BY status").fetchall())
    return {"counts": counts, "held": held.summary(db), "unread": unread, "drafts_open": drafts,
            "confirmations_pending": pending, "tasks": tasks, "tasks_overdue": overdue, "reactor_jobs": jobs,
            "peers_known": len(list_peers(db))}


def _name(name: str) -> str:
    return PREFIX + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _labels(labels: dict) -> dict:
    return {re.sub(r"[^a-zA-Z0-9_]", "_", str(k)) or "_": str(v) for k, v in labels.items()}


class NodeCollector:
    """Everything ``/metrics`` shows, from values read just before (``collect`` never waits)."""

    def __init__(self, services, stored: dict):
        self.services, self.stored = services, stored

    def collect(self):
        families: dict[str, Metric] = {}

        def family(name: str, typ: str, doc: str) -> Metric | None:
            if name in families:
                return families[name] if families[name].type == typ else None  # a clash: the first one stays
            families[name] = Metric(name, doc, typ)
            return families[name]

        metrics = self.services.metrics
        for c in metrics.snapshot():
            name = _name(c["name"][:-6] if c["name"].endswith("_total") else c["name"])
            f = family(name, "counter", f"meshnode counter {c['name']}")
            if f is not None:
                f.add_sample(name + "_total", _labels(c["labels"]), c["value"])
        for h in metrics.histograms():
            name = _name(h["name"])
            f = family(name, "histogram", f"meshnode histogram {h['name']} (seconds)")
            if f is None:
                continue
            labels = _labels(h["labels"])
            for le, n in h["buckets"]:
                f.add_sample(name + "_bucket", {**labels, "le": _le(le)}, n)
            f.add_sample(name + "_bucket", {**labels, "le": "+Inf"}, h["count"])
            f.add_sample(name + "_sum", labels, h["sum"])
            f.add_sample(name + "_count", labels, h["count"])
        for g in metrics.gauges():
            self._gauge(family, g["name"], g["value"], g["labels"])
        self._state(family)
        return list(families.values())

    def _gauge(self, family, name: str, value, labels: dict | None = None, doc: str = "") -> None:
        f = family(_name(name), "gauge", doc or f"meshnode gauge {name}")
        if f is not None:
            f.add_sample(_name(name), _labels(labels or {}), float(value))

    def _state(self, family) -> None:
        s, st = self.services, self.stored
        self._gauge(family, "up", 1, doc="1 while the node answers")
        self._gauge(family, "info", 1, {"did": s.key.did, "name": s.config.name, "version": __version__,
                                        "schema": str(s.store.version)}, "the node's identity")
        connected = s.mesh.peers_snapshot().get("connected", []) if s.mesh is not None else []
        self._gauge(family, "peers_connected", len(connected), doc="peers connected now")
        self._gauge(family, "peers_known", st["peers_known"], doc="peers in the address book")
        status = s.cycle.status() if s.cycle is not None else {"mode": "off"}
        self._gauge(family, "cycle_ticks", status.get("ticks") or 0, doc="ticks since the node started")
        for mode in sorted({*MODES, str(status.get("mode"))}):
            self._gauge(family, "cycle_mode", int(mode == status.get("mode")), {"mode": mode}, "1 for the current mode")
        self._gauge(family, "cycle_paused", int(bool(status.get("paused"))), doc="1 while a person paused the mind")
        self._gauge(family, "cycle_idle", int(bool(status.get("idle"))), doc="1 while the mind is idle")
        summary = st["held"]
        self._gauge(family, "held_commands", summary["count"], {"status": "held"}, "held commands")
        self._gauge(family, "held_commands", summary["released_waiting"], {"status": "released"})
        self._gauge(family, "notes_unread", st["unread"], doc="notes the agent has not read")
        for table, n in sorted(st["counts"].items()):
            self._gauge(family, "store_rows", n, {"table": table}, "stored rows (containers by class, notes)")
        self._gauge(family, "drafts_open", st["drafts_open"], doc="drafts waiting for a person or a commit")
        self._gauge(family, "confirmations_pending", st["confirmations_pending"], doc="tool calls waiting for a person")
        for status_name, n in sorted(st["tasks"].items()):
            self._gauge(family, "tasks", n, {"status": str(status_name)}, "tasks by status")
        self._gauge(family, "tasks_overdue", st["tasks_overdue"], doc="open tasks past their overdue time")
        for status_name, n in sorted(st["reactor_jobs"].items()):
            self._gauge(family, "reactor_jobs", n, {"status": str(status_name)}, "reactor jobs by status")
        self._gauge(family, "web_sse_streams", s.feed.streams, doc="open event streams")


def _le(le: float) -> str:
    return repr(float(le))


assert all(float(_le(b)) == b for b in BUCKETS)


def exposition(services, stored: dict) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(NodeCollector(services, stored))
    return generate_latest(registry)


async def metrics_text(services, args: dict, request) -> Response:
    stored = await services.read(store_gauges, services.now())
    return Response(exposition(services, stored), media_type=CONTENT_TYPE_LATEST)


ROUTES = [Endpoint("GET", "/metrics", metrics_text, raw=True,
                   doc="the node's counters, histograms and gauges in Prometheus' text format")]
