"""Consensus figures: the BFT core in the simulator, and a real committee beside Raft.

    python bench/consensus.py [--sim-heights 10] [--real-decisions 20] [--burst 40] [--catch-ups 3]
                              [--catch-up-only] [--smoke]

1. In sims/ (no faults, 50 ms median one-way latency): decision latency in
   simulated round trips (p50) and messages per decision, for committees of
   4, 16, 64 and 128 validators.
2. Real: decision latency of a 4-process meshnode committee on loopback
   (from the propose call to the proposer's commit, as the node stamps it),
   beside the commit latency of pysyncobj (Raft, crash faults only) with 3
   nodes on loopback in this same run, in its default configuration (appends
   batched on a 100 ms tick) and unbatched. Goal: p50 within 2x of Raft batched.
   Throughput: ``--burst`` values submitted at once (one client thread per
   value, released together, round robin over the four nodes, none waiting
   for its decision), from the first submit to the last decision on node 0,
   beside the same burst of appends on the Raft leader (batched).
   Goal: at least 0.5x Raft's throughput.
3. Real: catch-up of a restarted validator. One of a 4-process committee is
   stopped, the other three decide a value, and after GossipSub's replay
   window has passed (so only the catch-up protocol can tell it) the
   validator is started again: the time from its "ready" (and from its
   launch) until it has the missed decision, with nothing new proposed.
   (``--catch-up-only`` runs just this part.)
``--smoke``: committees of 4 and 16 in sims/, one height; one committee of four (homes made in this
process, three started at once) for one catch-up, with no wait for the replay window, then one
decision and a burst of two; Raft with short election timeouts: the bench end to end in seconds.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


SIM_SIZES = (4, 16, 64, 128)
REPLAY_WINDOW_S = 6.0  # past GossipSub's replay window (3 heartbeats of 1 s): only catch-up can tell it


def sim_figures(heights: int, sizes: tuple[int, ...] = SIM_SIZES) -> list[dict]:
    from sims.consensus import ConsensusSim, Options

    rows = []
    for n in sizes:
        r = ConsensusSim(Options(nodes=n, heights=heights, seed=1, submit_every_ms=0)).run()
        assert r.safe and r.decided_values == heights, (n, r.decided_values)
        rtt = 2 * r.options.latency_ms
        rows.append({"validators": n, "latency_p50_rtt": round(statistics.median(r.latencies_ms) / rtt, 2),
                     "latency_p50_ms": statistics.median(r.latencies_ms),
                     "broadcasts_per_decision": round(sum(r.messages_per_height) / heights, 1),
                     "sends_per_decision": round(r.sent / heights), "wall_seconds": round(r.wall_seconds, 1)})
        print(f"sim {n:>4} validators: p50 {rows[-1]['latency_p50_rtt']} round trips"
              f" ({rows[-1]['latency_p50_ms']} ms), {rows[-1]['broadcasts_per_decision']} broadcasts and"
              f" {rows[-1]['sends_per_decision']} sends per decision", flush=True)
    return rows


@contextlib.contextmanager
def committee(smoke: bool = False):
    """A started committee of four meshnode processes (tests/test_mesh_consensus.py's), killed after.
    ``smoke``: the homes are made in this process and the three after the first start at once."""
    from meshharness import Node, start_all, wait_until
    from test_mesh_consensus import FAST_CONSENSUS, ROUNDS_ON_REQUEST, committee_of, start_committee

    with tempfile.TemporaryDirectory() as tmp:
        if smoke:
            nodes = [Node(Path(tmp), f"v{i}") for i in range(4)]
            dids = ",".join(n.did for n in nodes)
            for n in nodes:
                n.env.update(FAST_CONSENSUS, **ROUNDS_ON_REQUEST, MESHNODE_CONSENSUS_COMMITTEE=dids)
        else:
            nodes = committee_of(Path(tmp), 4)
        try:
            if smoke:
                start_all(nodes, links=1)
                wait_until(lambda: all(len(n.try_call("peers") or []) >= 3 for n in nodes), 60, "the committee to meet")
            else:
                start_committee(nodes)
            yield nodes
        finally:
            for n in nodes:
                n.kill()


def real_committee(nodes, decisions: int, burst: int, warm_up: int = 2) -> tuple[list[float], dict]:
    """Decision latencies one at a time (after ``warm_up`` decisions not counted), then a burst of
    ``burst`` values submitted at once."""
    from meshharness import wait_until

    latencies = []
    for i in range(decisions + warm_up):  # the first ones warm the mesh up and are not counted
        proposer = nodes[i % 4]
        value = f"bench decision {i}"
        t = time.time() * 1000
        proposer.call("consensus_propose", {"value": value})
        # the node stamps its decision; a slow poll keeps the poll off the node's CPU
        hit = wait_until(lambda: [r for r in proposer.call("consensus_decisions", {"limit": 5})
                                  if r["value"] == value], 120, f"the decision of {value!r}", interval=0.05)
        if i >= warm_up:
            latencies.append(hit[0]["decided_at_ms"] - t)
    return latencies, _burst(nodes, burst)


def _burst(nodes, count: int, tag: str = "burst value") -> dict:
    values, submitted = [f"{tag} {i}" for i in range(count)], {}
    go = threading.Barrier(count)
    sent_before = _sent_by_kind(nodes)

    def ask(i: int, value: str) -> None:  # one client per value, all at once, round robin over the nodes
        go.wait()
        submitted[value] = time.time() * 1000
        nodes[i % len(nodes)].call("consensus_propose", {"value": value})

    clients = [threading.Thread(target=ask, args=(i, v)) for i, v in enumerate(values)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    deadline = time.monotonic() + 120
    while True:
        rows = {r["value"]: r for r in nodes[0].call("consensus_decisions", {"limit": count + 50})
                if r["status"] == "committed"}
        if all(v in rows for v in values) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    got = [v for v in values if v in rows]
    first = min(submitted.values())
    last = max((rows[v]["decided_at_ms"] for v in got), default=first)
    seconds = max(last - first, 1) / 1000
    sent = {k: n - sent_before.get(k, 0) for k, n in _sent_by_kind(nodes).items() if n - sent_before.get(k, 0)}
    return {"values": count, "decided": len(got), "seconds": round(seconds, 3),
            "per_second": round(len(got) / seconds, 1),
            "heights": len({rows[v]["height"] for v in got}),
            "messages_published": sent,  # by the four nodes, by kind, during the burst ("gossip": gossip messages)
            "latency_p50_ms": round(statistics.median(rows[v]["decided_at_ms"] - submitted[v] for v in got), 1)
            if got else None}


def catch_up(nodes, restarts: int, replay_window_s: float = REPLAY_WINDOW_S) -> list[dict]:
    """``restarts`` times: the last validator stopped, a value decided without it, ``replay_window_s``
    waited, the validator started again; the time until it has the missed decision."""
    from meshharness import wait_until
    from test_mesh_consensus import decided

    rows = []
    for i in range(restarts):
        away = nodes[3]
        away.stop()
        value = f"missed by the restarted validator {i}"
        nodes[i % 3].call("consensus_propose", {"value": value, "wait_seconds": 30})
        time.sleep(replay_window_s)  # a window by design, not a guess: no node state says it has passed
        away.set_bootstrap(nodes[0])
        launched = time.time() * 1000
        away.start()
        ready = time.time() * 1000
        wait_until(lambda: value in decided(away), 120, "the restarted validator to catch up", interval=0.05)
        at = next(r["decided_at_ms"] for r in away.call("consensus_decisions", {"limit": 5})
                  if r["value"] == value)
        rows.append({"from_ready_ms": round(at - ready), "from_launch_ms": round(at - launched)})
        print(f"catch-up {i}: {rows[-1]['from_ready_ms']} ms after ready, "
              f"{rows[-1]['from_launch_ms']} ms after launch", flush=True)
    return rows


def _sent_by_kind(nodes) -> dict[str, int]:
    """Consensus messages sent by the four nodes, by kind, and (``gossip``) the gossip messages
    that carried them (a node's messages of one step travel together)."""
    out: dict[str, int] = {}
    for n in nodes:
        for row in n.call("metrics"):
            if row["name"] == "consensus_sent":
                kind = row["labels"]["kind"]
                out[kind] = out.get(kind, 0) + row["value"]
            elif row["name"] == "consensus_gossip_published":
                out["gossip"] = out.get("gossip", 0) + row["value"]
    return out


@contextlib.contextmanager
def raft_leader(batch: bool = True, quick_election: bool = False):
    """Three pysyncobj nodes on loopback; yields the leader's replicated counter. ``batch``:
    pysyncobj's default (appends go out on a 100 ms tick); without it every append goes at once.
    ``quick_election``: election timeouts of 50-100 ms (pysyncobj's: 0.4-1.4 s, above 3 appends
    of 100 ms), for --smoke."""
    from pysyncobj import SyncObj, SyncObjConf, SyncObjException, replicated

    timeouts = {"raftMinTimeout": 0.05, "raftMaxTimeout": 0.1, "appendEntriesPeriod": 0.01} if quick_election else {}

    class Counter(SyncObj):
        def __init__(self, me, others):
            super().__init__(me, others, conf=SyncObjConf(dynamicMembershipChange=False,
                                                          appendEntriesUseBatch=batch, **timeouts))
            self.value = 0

        @replicated
        def incr(self):
            self.value += 1
            return self.value

    ports = []
    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    addrs = [f"127.0.0.1:{p}" for p in ports]
    nodes = [Counter(a, [b for b in addrs if b != a]) for a in addrs]
    def elected():
        deadline = time.monotonic() + 30
        while not any(n._isLeader() for n in nodes):
            if time.monotonic() > deadline:
                raise RuntimeError("pysyncobj elected no leader in 30 s")
            time.sleep(0.01)
        return next(n for n in nodes if n._isLeader())

    try:
        leader = elected()
        for n in nodes:
            n.cluster = nodes  # who else may lead, should this leader lose an election
        warm = 0
        for _ in range(20):  # warm up: two increments, asked again of the new leader after a lost election
            try:
                leader.incr(sync=True, timeout=10)
                warm += 1
            except SyncObjException:  # this leader lost an election (a busy machine, --smoke's short timeouts)
                leader = elected()
            if warm == 2:
                break
        yield leader
    finally:
        for n in nodes:
            n.destroy()


def raft(decisions: int, batch: bool = True, quick_election: bool = False) -> list[float]:
    """Commit latency of a replicated increment on the leader, one at a time. An increment the
    leader discards (it lost an election: on a busy machine with --smoke's short timeouts) is
    asked again of whoever leads now; its latency counts both tries."""
    from pysyncobj import SyncObjException

    with raft_leader(batch, quick_election) as leader:
        latencies = []
        for _ in range(decisions):
            t = time.perf_counter()
            for attempt in range(5):
                try:
                    leader.incr(sync=True, timeout=10)
                    break
                except SyncObjException:
                    if attempt == 4:
                        raise
                    leader = _current_leader(leader.cluster, time.monotonic() + 30)
            latencies.append((time.perf_counter() - t) * 1000)
        return latencies


def _current_leader(nodes, deadline: float):
    while True:
        for n in nodes:
            if n._isLeader():
                return n
        if time.monotonic() > deadline:
            raise RuntimeError("pysyncobj has no leader after losing one")
        time.sleep(0.01)


def raft_burst(count: int, quick_election: bool = False) -> dict:
    """``count`` appends on the leader at once (pysyncobj's default, batched): time until all commit."""
    with raft_leader(quick_election=quick_election) as leader:
        done, lock, all_in, started = [], threading.Lock(), threading.Event(), {}

        def callback(result, error, i):
            with lock:
                done.append((time.perf_counter() - started[i]) * 1000)
                if len(done) == count:
                    all_in.set()

        t0 = time.perf_counter()
        for i in range(count):
            started[i] = time.perf_counter()
            leader.incr(callback=lambda r, e, i=i: callback(r, e, i))
        all_in.wait(30)
        seconds = time.perf_counter() - t0
        return {"values": count, "decided": len(done), "seconds": round(seconds, 3),
                "per_second": round(len(done) / seconds, 1),
                "latency_p50_ms": round(statistics.median(done), 1) if done else None}


SMOKE = {"sim_heights": 1, "real_decisions": 1, "burst": 2, "catch_ups": 1}  # --smoke


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sim-heights", type=int, default=10)
    parser.add_argument("--real-decisions", type=int, default=20)
    parser.add_argument("--burst", type=int, default=40, help="values submitted at once for the throughput")
    parser.add_argument("--catch-ups", type=int, default=3, help="validator restarts to time")
    parser.add_argument("--catch-up-only", action="store_true", help="time only the catch-ups")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    smoke = args.smoke and not args.catch_up_only
    real = None
    with committee(args.smoke) as nodes:
        caught = catch_up(nodes, args.catch_ups, 0.0 if args.smoke else REPLAY_WINDOW_S)
        if smoke:  # the same committee, warm from the catch-up
            real = real_committee(nodes, args.real_decisions, args.burst, warm_up=0)
    ready_p50 = statistics.median(r["from_ready_ms"] for r in caught) if caught else None
    if args.catch_up_only:
        print(json.dumps({"bench": "consensus", "catch_up": caught, "catch_up_from_ready_p50_ms": ready_p50}))
        return
    sims = sim_figures(args.sim_heights, SIM_SIZES[:2] if args.smoke else SIM_SIZES)
    if real is None:
        with committee() as nodes:
            real = real_committee(nodes, args.real_decisions, args.burst)
    ours, burst = real
    raft_b = raft_burst(args.burst, args.smoke)
    baseline = raft(args.real_decisions, quick_election=args.smoke)
    unbatched = raft(args.real_decisions, batch=False, quick_election=args.smoke)
    p50_ours, p50_raft, p50_fast = statistics.median(ours), statistics.median(baseline), statistics.median(unbatched)
    print(f"real: meshnode 4-process committee p50 {p50_ours:.1f} ms (max {max(ours):.1f})")
    print(f"      pysyncobj Raft, 3 nodes, default (batched): p50 {p50_raft:.2f} ms (max {max(baseline):.2f});"
          f" ratio {p50_ours / p50_raft:.1f}x (goal <= 2x)")
    print(f"      pysyncobj Raft, 3 nodes, unbatched: p50 {p50_fast:.2f} ms (max {max(unbatched):.2f});"
          f" ratio {p50_ours / p50_fast:.0f}x")
    throughput_ratio = burst["per_second"] / raft_b["per_second"]
    print(f"burst: {args.burst} values at once: meshnode {burst['per_second']}/s ({burst['decided']} decided in"
          f" {burst['seconds']} s over {burst['heights']} height(s), per-value p50 {burst['latency_p50_ms']} ms;"
          f" messages published {burst['messages_published']});"
          f" Raft batched {raft_b['per_second']}/s (p50 {raft_b['latency_p50_ms']} ms)")
    print(f"ratio: throughput {throughput_ratio:.2f}x Raft batched (goal >= 0.5x);"
          f" latency p50 {p50_ours / p50_raft:.2f}x Raft batched (goal <= 2x)")
    print(json.dumps({"bench": "consensus", "sim": sims,
                      "real": {"meshnode_p50_ms": round(p50_ours, 2), "meshnode_max_ms": round(max(ours), 2),
                               "raft_p50_ms": round(p50_raft, 3), "raft_max_ms": round(max(baseline), 3),
                               "ratio_p50": round(p50_ours / p50_raft, 2), "goal_ratio": 2,
                               "raft_unbatched_p50_ms": round(p50_fast, 3),
                               "ratio_p50_unbatched": round(p50_ours / p50_fast, 1),
                               "decisions": args.real_decisions},
                      "burst": {"meshnode": burst, "raft_batched": raft_b,
                                "throughput_ratio": round(throughput_ratio, 3), "goal_throughput_ratio": 0.5},
                      "catch_up": caught, "catch_up_from_ready_p50_ms": ready_p50}))


if __name__ == "__main__":
    main()
