"""Mesh figures on loopback, with baselines measured in the same run.

    python bench/mesh.py [--nodes 20] [--messages 30] [--rounds 20]

1. connect latency between two hosts built as meshnode builds them
   (Noise, yamux, one connection per peer), beside py-libp2p's default
   (three connections per peer, staggered dials);
2. 1 KiB stream round trip on an open connection, beside a raw TCP round
   trip between the same two trio tasks (the floor);
3. gossip delivery latency (p50, p99) from one node to every node of a mesh
   of N meshnode OS processes;
4. DHT find-by-DID latency across that mesh (hop counts are not observable
   through py-libp2p 0.8.1's API, so none is printed);
5. RSS of one idle node.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import logging
import json
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


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


async def host_figures(rounds: int = 20) -> dict:
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
                    rtts = await echo_rtts(s.write, s.read)
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
        rtts = await echo_rtts(client.send_all, client.receive_some)
        out["tcp_rtt_ms_p50_baseline"] = pct(rtts, 50)
        await client.aclose()
        nursery.cancel_scope.cancel()
    return out


def mesh_figures(nodes: int, messages: int) -> dict:
    from meshharness import Node, wait_until

    root = Path(tempfile.mkdtemp(prefix="meshbench"))
    # heartbeats every 5 s: N nodes on two cores must leave room for the messages being measured
    env = {"MESHNODE_NET_HEARTBEAT_SECONDS": "5", "MESHNODE_NET_QUIET_AFTER_SECONDS": "15",
           "MESHNODE_NET_STALE_AFTER_SECONDS": "30", "MESHNODE_NET_DEAD_AFTER_SECONDS": "120"}
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
        wait_until(everyone_heard, 300, "every node to hear every other", interval=2.0)
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
        received = wait_until(all_received, 120, "every node to receive every message")
        for per_node in received:
            for info in per_node.values():
                latencies.append(info["received_at_ms"] - info["timestamp_ms"])
        out["gossip_ms_p50"] = pct(latencies, 50)
        out["gossip_ms_p99"] = pct(latencies, 99)
        out["gossip_deliveries"] = len(latencies)
        finds, failed = [], 0
        for target in mesh[-5:]:
            t = time.perf_counter()
            if mesh[1].try_call("find", {"did": target.did}, timeout=100) is None:
                failed += 1
                continue
            finds.append((time.perf_counter() - t) * 1000)
        out["find_by_did_ms_p50"] = pct(finds, 50) if finds else None
        out["find_by_did_ms_max"] = round(max(finds), 1) if finds else None
        out["find_by_did_failed"] = failed
    finally:
        for node in mesh:
            node.stop()
            node.kill()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--messages", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=20,
                        help="connects timed between two bare hosts (at most 5 of them with libp2p's defaults)")
    args = parser.parse_args()
    figures = trio.run(host_figures, args.rounds)
    for k, v in figures.items():
        print(f"{k:40} {v}")
    mesh = mesh_figures(args.nodes, args.messages)
    logging.disable(logging.CRITICAL)
    for k, v in mesh.items():
        print(f"{k:40} {v}")
    print(json.dumps({"bench": "mesh", **figures, **mesh}))


if __name__ == "__main__":
    main()
