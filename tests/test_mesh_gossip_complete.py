"""Public notes reach every node of a mesh of real processes, every one, and each arrival is
accounted for: by gossip, or by the periodic sync (the safety net) when gossip missed it.

Issue 18: with 20 processes, 4 minutes after 30 public notes were published from one node,
several nodes held only 0-11 of them, and nothing counted the loss. Runs of 8 nodes or more
go through ``flock /tmp/meshnode-bigmesh.lock`` on this machine (shared by several runs).
``python tests/test_mesh_gossip_complete.py N [NOTES]`` prints the figures as one JSON line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from meshharness import Node, cpu_s, metric, pct, report, start_all, wait_until

NOTES = 30
OFF = {"MESHNODE_COGNITION_ENABLED": "false", "MESHNODE_WEB_ENABLED": "false"}
# production heartbeats (10 s, quiet after 30 s...): FAST_NET's 0.5 s heartbeats from 20 nodes are
# 40 gossip messages a second, each relayed to 6 peers, which alone starve 20 processes on 2 cores
# (peers flapped quiet and dead); sync stays at FAST_NET's 2 s, the safety net under test
PRODUCTION_LIVENESS = {"MESHNODE_NET_HEARTBEAT_SECONDS": "10", "MESHNODE_NET_QUIET_AFTER_SECONDS": "25",
                       "MESHNODE_NET_STALE_AFTER_SECONDS": "60", "MESHNODE_NET_DEAD_AFTER_SECONDS": "300"}


def connected(node) -> int:
    return len((node.try_call("status") or {}).get("connected", []))


def spread(root: Path, count: int, notes: int = NOTES, env: dict | None = None, deadline_s: float = 60.0,
           idle_probe_s: float = 0.0, spacing_s: float = 0.0, settle_cores: float = 0.0) -> dict:
    """Start ``count`` nodes, wait until each is connected to its gossip degree, publish ``notes``
    public notes from the first node, and wait until every node holds all of them (or the
    deadline). Returns the figures: delivered/expected, latency per note per node (p50, p99, max,
    from the note's timestamp to its arrival there) and where it went (``split``), how many
    arrived by gossip and by sync, the CPU all nodes spent from the first publish until the last
    arrival (``burst_cpu_s``; the idle rate beside it when ``idle_probe_s``). ``spacing_s``: a pause
    between publishes (0: as fast as note_add returns). ``settle_cores``: first wait (up to 90 s)
    until the mesh's CPU over ``idle_probe_s`` falls under that many cores (formation's own work:
    DHT refreshes, announces, first syncs, is over)."""
    nodes = [Node(root, f"n{i}", env={**OFF, **PRODUCTION_LIVENESS, **(env or {})}) for i in range(count)]
    try:
        started = time.monotonic()
        start_all(nodes)
        want = min(count - 1, 4)
        wait_until(lambda: all(connected(n) >= want for n in nodes), 60, f"every node connected to {want} peers")
        formed = time.monotonic() - started
        author, others = nodes[0], nodes[1:]
        idle_rate, settling = None, time.monotonic()
        while idle_probe_s:  # the mesh's idle CPU rate, to set the burst's against (script only)
            idle_cpu = cpu_s(nodes)
            time.sleep(idle_probe_s)
            idle_rate = (cpu_s(nodes) - idle_cpu) / idle_probe_s
            if not settle_cores or idle_rate <= settle_cores or time.monotonic() - settling > 90:
                break
        settled = time.monotonic() - settling
        spies = _profile(nodes)
        cpu_before, first = cpu_s(nodes), time.monotonic()
        dids = []
        for i in range(notes):
            dids.append(author.call("note_add", {"text": f"public note {i}", "audience": "public"})["did"])
            if spacing_s:
                time.sleep(spacing_s)
        published = time.monotonic()
        held: dict[str, dict] = {}

        def everyone_has_all() -> bool:
            for n in others:
                if len(held.get(n.name, {})) < notes:
                    held[n.name] = n.try_call("received", {"dids": dids}) or held.get(n.name, {})
            return all(len(held.get(n.name, {})) == notes for n in others)

        try:
            wait_until(everyone_has_all, deadline_s, f"all {notes} notes at all {count} nodes", interval=0.5)
        except AssertionError:
            pass  # the figures say what is missing
        waited = time.monotonic() - published
        burst_cpu, burst_s = cpu_s(nodes) - cpu_before, time.monotonic() - first
        for spy in spies:
            spy.wait(30)
        latencies = [r["received_at_ms"] - r["timestamp_ms"] for rows in held.values() for r in rows.values()]
        own = author.try_call("received", {"dids": dids}) or {}
        by_gossip, late = {}, {}

        def gossip_accounted() -> bool:
            """Every node's gossip copy of every note came (delivered, or already held: sync came
            first). A copy still in flight when sync beat it, as on a busy machine, is waited for;
            one that never comes is the unaccounted below."""
            for n in others:
                by_gossip[n.name] = metric(n, "gossip_delivered", cls="note")
                late[n.name] = metric(n, "gossip_already_held", cls="note")
            return all(by_gossip[n.name] + late[n.name] >= notes for n in others)

        try:
            wait_until(gossip_accounted, 30, "every gossip copy to arrive", interval=0.5)
        except AssertionError:
            pass  # the figures say which node is short
        figures = {
            "nodes": count, "notes": notes, "formed_s": round(formed, 1), "settled_s": round(settled, 1), "waited_s": round(waited, 1),
            "delivered": sum(len(rows) for rows in held.values()), "expected": notes * len(others),
            "short": {n.name: notes - len(held.get(n.name, {})) for n in others if len(held.get(n.name, {})) < notes},
            "p50_ms": pct(latencies, 50), "p99_ms": pct(latencies, 99), "max_ms": pct(latencies, 100),
            "split": latency_split(own, held.values()),
            "publish_s": round(published - first, 2), "burst_cpu_s": round(burst_cpu, 2),
            "burst_wall_s": round(burst_s, 2), "idle_cores": None if idle_rate is None else round(idle_rate, 3),
            "by_gossip": sum(by_gossip.values()), "by_sync": sum(len(held.get(n.name, {})) - by_gossip[n.name]
                                                               for n in others),
        }
        figures["work"] = dict.fromkeys(COPIES, 0)
        for n in nodes:  # one metrics call per node
            for m in n.try_call("metrics") or []:
                if m["name"] in figures["work"]:
                    figures["work"][m["name"]] += m["value"]
        figures["mesh_degrees"] = sorted((n.try_call("formation") or {}).get("gossip_mesh", {}).get(
            "/meshnode/containers/1", -1) for n in nodes)  # copies of each message a node gets, about
        figures["dropped"] = _tally(nodes)
        sent_dropped = sum(v for k, v in figures["dropped"].items() if k.startswith("gossip_dropped:"))
        # a node that missed notes by gossip counted why (ignored or dropped here), or a sender did
        figures["unaccounted"] = {n.name: notes - by_gossip[n.name] for n in others
                                  if by_gossip[n.name] + late[n.name] < notes and not sent_dropped
                                  and not sum(_tally([n]).values())}
        if figures["delivered"] < figures["expected"] and __name__ == "__main__":
            for n in (nodes[0], nodes[1]):
                figures[n.name] = {f"{m['name']}{m['labels'] or ''}": m["value"] for m in n.call("metrics")
                                   if not m["name"].startswith(("control", "store"))}
                figures[n.name + "_log"] = [x for x in n.output[-30:]]
        return figures
    except BaseException:
        report(nodes)
        raise
    finally:
        for n in nodes:
            n.kill()


STEPS = (("author_write", "timestamp", "written"), ("author_publish", "written", "published"),
         ("hops", "published", "arrived"), ("validate", "arrived", "validated"),
         ("reader_wait", "validated", "read"), ("store", "read", "stored"))


# what the nodes did with the copies (each node gets a note from several mesh peers)
COPIES = ("gossip_validations", "gossip_delivered", "gossip_already_held", "gossip_decoded_again")


def latency_split(own: dict, received) -> dict:
    """Where the time went (``net.gossip_timing``'s stages): per step, p50/p99/max in ms over every
    note at every node; ``hops`` is from the author's publish to the first copy reaching a node's
    validator (py-libp2p's queues and the relays), the rest is the node's own work."""
    steps: dict[str, list] = {name: [] for name, _, _ in STEPS}
    for rows in received:
        for did, row in rows.items():
            at = {**{k: v for k, v in (own.get(did, {}).get("stages") or {}).items() if k in ("written", "published")},
                  **(row.get("stages") or {}), "timestamp": row["timestamp_ms"]}
            for name, start, end in STEPS:
                if start in at and end in at:
                    steps[name].append(at[end] - at[start])
    out = {name: [pct(v, 50), pct(v, 99), pct(v, 100)] for name, v in steps.items() if v}
    out["n"] = {name: len(v) for name, v in steps.items()}
    return out


def _profile(nodes) -> list:
    """With GOSSIP_PROFILE=<dir> (a bench aid): py-spy samples the author and two receivers for
    6 s from the first publish, as collapsed stacks in <dir>/<node>.txt."""
    out = os.environ.get("GOSSIP_PROFILE")
    if not out:
        return []
    import subprocess
    spy = str(Path(sys.executable).with_name("py-spy"))
    spies = [subprocess.Popen([spy, "record", "-p", str(n.proc.pid), "-d", "6", "-r", "100", "--nonblocking",
                               "-f", "raw", "-o", f"{out}/{n.name}.txt"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for n in (nodes[0], nodes[1], nodes[len(nodes) // 2])]
    time.sleep(0.5)  # py-spy attaches
    return spies


def _tally(nodes) -> dict:
    """Every gossip drop and ignore the nodes counted, summed by name and reason."""
    out: dict[str, int] = {}
    for n in nodes:
        for m in n.try_call("metrics") or []:
            if m["name"] in ("gossip_dropped", "gossip_ignored"):
                key = f"{m['name']}:{m['labels'].get('reason')}"
                out[key] = out.get(key, 0) + m["value"]
    return out


# The default run's mesh is small enough for a test (each process starts a node's whole stack on
# two shared cores) and still a mesh: 6 nodes, each connected to 4 peers, so a note reaches most of
# them through relays, not from its author. The sizes of issue 18 run under ``make soak``: 20
# processes, and 50 with the default 30 s sync (at 50 on 2 cores, the harness's 2 s sync with every
# peer is most of the load: measured at 20, find p50 2.5 s instead of 0.06 s; the goal is one sync
# period).
MESH_SIZES = [
    pytest.param(6, 60.0, {}, id="6"),
    pytest.param(20, 60.0, {}, id="20", marks=pytest.mark.soak),
    pytest.param(50, 180.0, {"MESHNODE_NET_SYNC_SECONDS": "30"}, id="50", marks=pytest.mark.soak),
]


@pytest.mark.parametrize("count, deadline_s, env", MESH_SIZES)
def test_every_process_gets_every_public_note(tmp_path, count, deadline_s, env):
    figures = spread(tmp_path, count, deadline_s=deadline_s, env=env)
    print(json.dumps(figures))
    assert figures["delivered"] == figures["expected"], figures
    assert figures["by_gossip"] + figures["by_sync"] == figures["expected"] and not figures["unaccounted"], figures


def test_public_notes_gossip_missed_come_by_sync_and_are_accounted_for(tmp_path):
    """The safety net: a node that was not there when notes were gossiped, and whose gossip relay
    rate for their (unknown) author lets one through, gets them all from a peer that holds them
    (not from their author, which is gone by then), the rest by sync; the ignored ones counted."""
    author, holder = (Node(tmp_path, n, env=OFF) for n in ("author", "holder"))
    late = Node(tmp_path, "late", env={**OFF, "MESHNODE_LIMITS_UNKNOWN_GOSSIP_BURST": "1"})
    nodes = [author, holder, late]
    try:
        author.start()
        holder.set_bootstrap(author)
        holder.start()
        wait_until(lambda: connected(author) >= 1, 30, "the holder connected to the author")
        notes = [author.call("note_add", {"text": f"said while you were away {i}", "audience": "public"})["did"]
                 for i in range(3)]
        wait_until(lambda: len(holder.try_call("received", {"dids": notes}) or {}) == 3, 30, "the holder's notes")
        assert author.stop() == 0
        late.set_bootstrap(holder)
        late.start()
        wait_until(lambda: len(late.try_call("received", {"dids": notes}) or {}) == 3, 30,
                   "the late node to get every note")
        # pubsub may replay recent gossip to a newcomer (only within its history window: on a loaded
        # machine the late node starts after it, and no copy comes by gossip at all): at most one
        # copy passes the relay limit, the others are counted as ignored or as already held
        by_gossip = metric(late, "gossip_delivered", cls="note")
        ignored = metric(late, "gossip_ignored", reason="unknown_author_rate")
        assert by_gossip <= 1 and ignored <= 3 - by_gossip
        assert metric(late, "containers_received", via="push") + metric(late, "sync_fetched") >= 3 - by_gossip
        for n in (holder, late):
            assert n.stop() == 0
    except BaseException:
        report(nodes)
        raise
    finally:
        for n in nodes:
            n.kill()


if __name__ == "__main__":
    root = Path(tempfile.mkdtemp(prefix="gossip", dir="/tmp"))
    try:
        # N [NOTES [DEADLINE_S]] [SPACING_S=0.1] [MESHNODE_X=value ...]: the env pairs go to every node
        pairs = dict(a.split("=", 1) for a in sys.argv[4:])
        spacing = float(pairs.pop("SPACING_S", 0))
        settle = float(pairs.pop("SETTLE_CORES", 0))  # e.g. 0.3: publish once formation's work is over
        print(json.dumps(spread(root, int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else NOTES,
                                deadline_s=float(sys.argv[3]) if len(sys.argv) > 3 else 60.0,
                                env=pairs, idle_probe_s=2.0, spacing_s=spacing, settle_cores=settle)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
