"""Mesh figures on loopback, with baselines measured in the same run.

    python bench/mesh.py [--nodes 20] [--messages 30] [--rounds 20] [--only-formation [--quiet-heartbeats]]
                         [--smoke]

1. connect latency between two hosts built as meshnode builds them
   (Noise, yamux, one connection per peer), beside py-libp2p's default
   (three connections per peer, staggered dials);
2. 1 KiB stream round trip on an open connection, beside a raw TCP round
   trip between the same two trio tasks (the floor);
3. formation: a seed, then N-1 processes started at once knowing only the
   seed; each node, once at its GossipSub degree, finds every other by DID;
   seconds from the last start to every node at its degree
   (formation_degree_s) and to every node at its degree AND having found
   every other (formation_s, issue 18's formation figure); find-by-DID
   p50/p99/max of those finds, and the not_found of an absent DID;
   --quiet-heartbeats forms it with heartbeats every 3600 s (the load once
   heartbeats leave gossip), MESHBENCH_SLOW=1 prints each slow find's lookup
   trace beside who held the target's announce when it was asked;
4. gossip delivery latency (p50, p99) and delivered/expected, 30 notes from
   one node to every node of a mesh of N meshnode OS processes;
5. RSS of one idle node; idle CPU per node with 5, 12 and 19 peers
   (bench/idle_cpu.py, production timers).
The last line is one JSON object. ``--smoke`` runs every part with two nodes, a few rounds, no
settle window and fast heartbeats, its homes made in this process: the bench end to end in seconds.
"""

from __future__ import annotations

import argparse
import logging
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


# the harness's 2 s sync (FAST_NET) has every node reconcile with every peer every 2 s: at 20
# processes on two cores that load alone is what the figures would measure; the default is 30 s
PRODUCTION_SYNC = {"MESHNODE_NET_SYNC_SECONDS": "30"}


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))], 2)


async def echo_rtts(send, receive, size: int = 1024, rounds: int = 200) -> list[float]:
    """Round trips (ms) of ``size`` bytes through an echo, on any send/receive pair."""
    rtts = []
    for _ in range(rounds):
        t = time.perf_counter()
        await send(b"x" * size)
        got = 0
        while got < size:
            got += len(await receive(size - got))
        rtts.append((time.perf_counter() - t) * 1000)
    return rtts


async def host_figures(rounds: int = 20, echoes: int = 200) -> dict:
    import multiaddr
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.crypto.x25519 import create_new_key_pair as x25519
    from libp2p.network.config import ConnectionConfig
    from libp2p.peer.peerinfo import PeerInfo
    from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
    from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux

    from meshnode.net import libp2p_fixes

    libp2p_fixes.route_libp2p_logging()

    def make(per_peer: int):
        kp = create_new_key_pair()
        return new_host(key_pair=kp, sec_opt={NOISE: Noise(kp, noise_privkey=x25519().private_key)},
                        muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=per_peer))

    async def echo(stream):
        try:
            while True:
                data = await stream.read(65536)
                await stream.write(data)
        except Exception:
            pass

    out = {}
    loop = [multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]
    for label, per_peer in (("meshnode", 1), ("libp2p_default", 3)):
        times = []
        for _ in range(rounds if per_peer == 1 else min(rounds, 5)):
            a, b = make(per_peer), make(per_peer)
            async with a.run(loop), b.run(loop):
                t = time.perf_counter()
                await a.connect(PeerInfo(b.get_id(), b.get_transport_addrs()))
                times.append((time.perf_counter() - t) * 1000)
                if label == "meshnode" and "stream_rtt_ms_p50" not in out:
                    b.set_stream_handler("/bench/echo/1", echo)
                    s = await a.new_stream(b.get_id(), ["/bench/echo/1"])
                    rtts = await echo_rtts(s.write, s.read, rounds=echoes)
                    out["stream_rtt_ms_p50"] = pct(rtts, 50)
                    out["stream_rtt_ms_p99"] = pct(rtts, 99)
                await a.close()
                await b.close()
        out[f"connect_ms_p50_{label}"] = pct(times, 50)
    out["connect_ratio_default_over_meshnode"] = round(out["connect_ms_p50_libp2p_default"]
                                                       / out["connect_ms_p50_meshnode"], 1)
    # the floor: raw TCP round trip of 1 KiB between two trio tasks
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        async def serve(stream):
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        nursery.start_soon(trio.serve_listeners, serve, listeners)
        client = await trio.open_tcp_stream("127.0.0.1", port)
        rtts = await echo_rtts(client.send_all, client.receive_some, rounds=echoes)
        out["tcp_rtt_ms_p50_baseline"] = pct(rtts, 50)
        await client.aclose()
        nursery.cancel_scope.cancel()
    return out


def mesh_figures(nodes: int, messages: int, smoke: bool = False) -> dict:
    """``smoke``: homes made in this process, the harness's fast heartbeats, a short poll."""
    from meshharness import FAST_NET, Node, wait_until

    root = Path(tempfile.mkdtemp(prefix="meshbench"))
    # heartbeats every 5 s: N nodes on two cores must leave room for the messages being measured
    env = {**(FAST_NET if smoke else BENCH_HEARTBEATS), **PRODUCTION_SYNC}
    mesh = [Node(root, f"b{i}", env=env) for i in range(nodes)]
    out: dict = {"nodes": nodes}
    try:
        t = time.perf_counter()
        for i, node in enumerate(mesh):
            if i:
                node.set_bootstrap(mesh[max(0, (i - 1) // 2)])  # a tree: each knows only its parent
            node.start(timeout=120)
        out["start_all_s"] = round(time.perf_counter() - t, 1)
        def heard_all(node) -> bool:
            rows = node.try_call("peers", timeout=10) or []
            return len([r for r in rows if r["liveness"]]) >= nodes - 1
        pending = list(mesh)
        def everyone_heard():
            pending[:] = [n for n in pending if not heard_all(n)]
            return not pending
        wait_until(everyone_heard, 300, "every node to hear every other", interval=0.2 if smoke else 2.0)
        out["mesh_formed_s"] = round(time.perf_counter() - t, 1)
        idle_rss = int(next(line.split()[1] for line in Path(f"/proc/{mesh[-1].proc.pid}/status").read_text().splitlines()
                            if line.startswith("VmRSS")))
        out["idle_rss_mib"] = round(idle_rss / 1024, 1)
        dids = []
        for i in range(messages):
            dids.append(mesh[0].call("note_add", {"text": f"bench message {i}", "audience": "public"})["did"])
            time.sleep(0.05)  # pacing between publishes, part of the measured workload
        latencies = []
        def all_received():
            got = [n.call("received", {"dids": dids}) for n in mesh[1:]]
            return got if all(len(g) == len(dids) for g in got) else None
        try:
            received = wait_until(all_received, 120, "every node to receive every message")
        except AssertionError:  # counted, not fatal: delivered/expected says how much was lost
            received = [n.try_call("received", {"dids": dids}, timeout=30) or {} for n in mesh[1:]]
        for per_node in received:
            for info in per_node.values():
                latencies.append(info["received_at_ms"] - info["timestamp_ms"])
        out["gossip_ms_p50"] = pct(latencies, 50) if latencies else None
        out["gossip_ms_p99"] = pct(latencies, 99) if latencies else None
        out["gossip_deliveries"] = len(latencies)
        out["gossip_delivered_over_expected"] = round(len(latencies) / (len(dids) * (nodes - 1)), 3)
    finally:
        stop_all(mesh)
    return out


def idle_figures(nodes: int, settle_s: float, window_s: float, smoke: bool = False) -> dict:
    """Idle CPU per node (% of one core) in fresh meshes of 6, 13 and 20 processes (5, 12, 19 peers
    each; only those of at most ``nodes``), by bench/idle_cpu.py (production timers)."""
    from idle_cpu import measure_idle

    out = {}
    for size in [n for n in (6, 13, 20) if n <= nodes] or [nodes]:
        got = measure_idle(size, settle_s, window_s, smoke=smoke)
        peers = round(got["peers_per_node_mean"])
        out[f"idle_cpu_percent_mean_{peers}_peers"] = got["cpu_percent_mean"]
        out[f"idle_cpu_percent_p90_{peers}_peers"] = got["cpu_percent_p90"]
    return out


# the load after hb-direct lands (heartbeats on direct streams, not flooded mesh-wide): until then,
# heartbeats nearly silenced (--quiet-heartbeats), so that the flood does not load what is measured
QUIET_HEARTBEATS = {"MESHNODE_NET_HEARTBEAT_SECONDS": "3600", "MESHNODE_NET_QUIET_AFTER_SECONDS": "9000",
                    "MESHNODE_NET_STALE_AFTER_SECONDS": "20000", "MESHNODE_NET_DEAD_AFTER_SECONDS": "100000"}
BENCH_HEARTBEATS = {"MESHNODE_NET_HEARTBEAT_SECONDS": "5", "MESHNODE_NET_QUIET_AFTER_SECONDS": "15",
                    "MESHNODE_NET_STALE_AFTER_SECONDS": "30", "MESHNODE_NET_DEAD_AFTER_SECONDS": "120"}


def formation_figures(nodes: int, finds: int, quiet: bool = False, budget_s: float = 90.0) -> dict:
    """A seed, then ``nodes - 1`` nodes started at once (each knows only the seed). Each node, as
    soon as it is at its GossipSub degree, finds ``finds`` others by DID (all others when 0), one
    after another, asking again for those it missed (all nodes at once, as a mesh forming does).
    Figures: seconds from the last start to every node at its degree (``formation_degree_s``), and
    to every node at its degree AND having found every other (``formation_s``, issue 18's
    formation); find-by-DID p50/p99 of every find asked; how long an absent DID takes to say
    not_found. ``MESHBENCH_SLOW=1`` prints each slow find with its lookup trace
    (meshnode/net/lookup_trace.py) beside who held the target's announce when it was asked."""
    import threading

    from meshharness import at_degree, cpu_s, metric, start_from_seed
    from meshnode.net.control import ControlError

    root = Path(tempfile.mkdtemp(prefix="meshform"))
    env = {**(QUIET_HEARTBEATS if quiet else BENCH_HEARTBEATS), **PRODUCTION_SYNC}
    t = time.perf_counter()
    mesh = start_from_seed(root, nodes, env=env, prefix="f")
    out: dict = {"formation_start_all_s": round(time.perf_counter() - t, 1), "quiet_heartbeats": quiet}
    try:
        t = time.perf_counter()  # the last node said ready
        at_degree_s: dict[str, float] = {}
        done_s: dict[str, float] = {}
        times: list[float] = []
        failed: dict = {}
        slow: list[dict] = []

        def node_forms(i: int) -> None:
            node = mesh[i]
            deadline = t + budget_s
            while not at_degree(node, nodes):
                if time.perf_counter() > deadline:
                    return
                time.sleep(0.25)  # the poll interval of the node's own answer
            at_degree_s[node.name] = time.perf_counter() - t
            others = [m for m in mesh if m is not node]
            targets = (others[i % len(others):] + others[:i % len(others)])[:finds or len(others)]
            while targets and time.perf_counter() < deadline:
                missed = []
                for target in targets:
                    began = time.perf_counter()
                    try:
                        answer = node.call("find", {"did": target.did}, timeout=60)
                    except (ControlError, OSError) as exc:
                        failed[f"{node.name}->{target.name}"] = f"{type(exc).__name__}: {exc}"
                        times.append((time.perf_counter() - began) * 1000)
                        missed.append(target)
                        continue
                    times.append((time.perf_counter() - began) * 1000)
                    if answer.get("trace") is not None:
                        slow.append({"finder": node.name, "target": target.name, "ms": times[-1],
                                     "name": answer.get("name"), "trace": answer["trace"]})
                targets = missed
            if not targets:
                done_s[node.name] = time.perf_counter() - t
        busy_before, nodes_before = cpu_jiffies(), cpu_s(mesh)
        threads = [threading.Thread(target=node_forms, args=(i,), daemon=True) for i in range(nodes)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(budget_s + 120)
        out["formation_machine_busy"] = busy_fraction(busy_before, cpu_jiffies())
        # the CPU the nodes spent from the last start until formed, and what it means on this
        # machine's cores: formation cannot be faster than that floor
        spent = cpu_s(mesh) - nodes_before
        out["formation_nodes_cpu_s"] = round(spent, 1)
        out["formation_cpu_floor_s"] = round(spent / os.cpu_count(), 1)
        formed = len(done_s) == nodes
        out["formation_degree_s"] = round(max(at_degree_s.values()), 2) if len(at_degree_s) == nodes else None
        out["formation_s"] = round(max(done_s.values()), 2) if formed else None
        if not formed:
            out["formation_unfinished"] = nodes - len(done_s)
        out["find_by_did_n"] = len(times)
        out["find_by_did_ms_p50"] = pct(times, 50) if times else None
        out["find_by_did_ms_p99"] = pct(times, 99) if times else None
        out["find_by_did_ms_max"] = round(max(times), 1) if times else None
        out["find_by_did_over_1s"] = len([x for x in times if x > 1000])
        out["find_by_did_no_announce"] = len([f for f in slow if f["name"] is None])
        out["find_by_did_failed"] = len(failed)
        if failed:
            out["find_by_did_failures"] = dict(list(failed.items())[:5])
        for via in ("cache", "connected", "closest", "walk"):  # where the nodes' announce lookups were answered
            out[f"announce_lookups_{via}"] = sum(metric(n, "announce_lookups", via=via) for n in mesh)
        if slow:
            explain_slow_finds(mesh, slow)
        if formed:
            out.update(formed_mesh_finds(mesh))
        from meshnode.base.identity.keys import NodeKey

        absent = NodeKey.generate().did
        began = time.perf_counter()
        try:
            mesh[1].call("find", {"did": absent}, timeout=120)
            out["find_absent"] = "found?!"
        except Exception as exc:  # the typed not_found is the expected answer
            out["find_absent"] = getattr(exc, "code", type(exc).__name__)
        out["find_absent_ms"] = round((time.perf_counter() - began) * 1000, 1)
    finally:
        stop_all(mesh)
    return out


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_fraction(before: tuple[int, int], after: tuple[int, int]) -> float:
    """How much of every core was busy between two samples (1.0: the machine was saturated)."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total, 3) if total else 0.0


def formed_mesh_finds(mesh: list, per_node: int = 5) -> dict:
    """Find-by-DID on the formed mesh (what a user asks once it has formed): every node finds
    ``per_node`` others at once, beside the machine's load while they do."""
    import threading

    times: list[float] = []

    def finds(i: int) -> None:
        node, others = mesh[i], [m for m in mesh if m is not mesh[i]]
        for k in range(per_node):
            target = others[(i * 7 + k * 3) % len(others)]
            began = time.perf_counter()
            try:
                node.call("find", {"did": target.did}, timeout=60)
            except Exception:
                pass  # counted as slow by its time
            times.append((time.perf_counter() - began) * 1000)

    busy_before = cpu_jiffies()
    threads = [threading.Thread(target=finds, args=(i,), daemon=True) for i in range(len(mesh))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    return {"formed_find_n": len(times), "formed_find_ms_p50": pct(times, 50),
            "formed_find_ms_p99": pct(times, 99), "formed_find_machine_busy": busy_fraction(busy_before, cpu_jiffies())}


def explain_slow_finds(mesh: list, slow: list[dict]) -> None:
    """Each slow find's trace beside the target's side (its pushes and puts) and who had heard the
    target's announce when the find began (MESHBENCH_SLOW=1; the whole of it in MESHBENCH_TRACE)."""
    import os

    states = {n.name: (n.try_call("formation", timeout=30) or {}).get("lookups", {}) for n in mesh}
    names = {n.peer_id[-6:]: n.name for n in mesh if n.peer_id}
    by_name = {n.name: n for n in mesh}
    if os.environ.get("MESHBENCH_TRACE"):
        Path(os.environ["MESHBENCH_TRACE"]).write_text(json.dumps({"slow": slow, "states": states,
                                                                   "names": names}, indent=1))
    if not os.environ.get("MESHBENCH_SLOW"):
        return
    for f in slow:
        tr, target = f["trace"], by_name[f["target"]]
        began = tr["started_ms"]
        holders = sorted(n for n, st in states.items() if st.get("first_heard", {}).get(target.did, 1e18) <= began)
        t_state = states.get(target.name, {})
        print(f"slow find {f['finder']}->{f['target']}: {f['ms']:.0f} ms, name {f['name']}, "
              f"{ {k: v for k, v in tr.items() if k not in ('steps', 'did', 'started_ms')} }")
        print(f"  held by {len(holders)} nodes when asked: {holders}")
        print(f"  target pushes (ms rel. to find): {[(p[0] - began, *p[1:]) for p in t_state.get('pushes', [])]}")
        print(f"  target puts: {[(p[0] - began, *p[1:]) for p in t_state.get('puts', [])]}")
        for at, stage, req, peer, outcome, took in tr["steps"]:
            who = names.get(peer, peer)
            heard = states.get(who, {}).get("first_heard", {}).get(target.did)
            print(f"    {at:6d} {stage:10} {req:9} {who:5} {outcome:16} {took:5d} ms"
                  f"  (heard {'never' if heard is None else heard - began})")


def stop_all(mesh: list) -> None:
    """Stop every node at once (one by one, 20 nodes on two cores take minutes to stop)."""
    import signal

    for node in mesh:
        if node.proc is not None and node.proc.poll() is None:
            node.proc.send_signal(signal.SIGINT)
    for node in mesh:
        node.stop()
        node.kill()


SMOKE = {"nodes": 2, "messages": 2, "finds": 0, "rounds": 1, "idle_settle": 0.0, "idle_window": 0.2}  # --smoke


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--finds", type=int, default=0,
                        help="DIDs each node finds while the mesh forms (0: every other node)")
    parser.add_argument("--only-formation", action="store_true", help="skip everything but the formation figures")
    parser.add_argument("--quiet-heartbeats", action="store_true",
                        help="formation with heartbeats every 3600 s (the load once heartbeats leave gossip)")
    parser.add_argument("--idle-settle", type=float, default=30.0, help="seconds a mesh settles before idle CPU")
    parser.add_argument("--idle-window", type=float, default=20.0, help="seconds idle CPU is measured over")
    parser.add_argument("--rounds", type=int, default=20,
                        help="connects timed between two bare hosts (at most 5 of them with libp2p's defaults)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout's TERM still stops the nodes
    figures = {} if args.only_formation else trio.run(host_figures, args.rounds, 5 if args.smoke else 200)
    for k, v in figures.items():
        print(f"{k:40} {v}")
    mesh = formation_figures(args.nodes, args.finds, args.quiet_heartbeats)
    if not args.only_formation:
        mesh.update(mesh_figures(args.nodes, args.messages, args.smoke))
        mesh.update(idle_figures(args.nodes, args.idle_settle, args.idle_window, args.smoke))
    logging.disable(logging.CRITICAL)
    for k, v in mesh.items():
        print(f"{k:40} {v}")
    print(json.dumps({"bench": "mesh", **figures, **mesh}))


if __name__ == "__main__":
    main()
