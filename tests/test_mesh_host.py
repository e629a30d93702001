"""The host's edges: Noise only, one node per port, real announce addresses, bootstrap trouble, interests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node, wait_until
from meshnode.net.libp2p_fixes import port_is_free


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_plaintext_peer_is_refused(tmp_path):
    node = Node(tmp_path, "n")
    try:
        node.start()
        address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
        result = subprocess.run([sys.executable, str(Path(__file__).with_name("plaintext_peer.py")), address],
                                capture_output=True, text=True, timeout=60)
        assert result.stdout.startswith("refused"), result.stdout + result.stderr[-1000:]
    finally:
        node.kill()


def test_a_second_node_on_a_taken_port_refuses_to_start(tmp_path):
    port = free_port()
    env = {"MESHNODE_NET_LISTEN": f"/ip4/127.0.0.1/tcp/{port}"}
    first, second = Node(tmp_path, "first", env=env), Node(tmp_path, "second", env=env)
    try:
        first.start()
        assert not port_is_free(port, "127.0.0.1")
        result = subprocess.run([sys.executable, "-m", "meshnode", "--home", str(second.home), "run"],
                                env=second.env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert result.returncode == 1
        assert "already in use" in result.stderr and "Traceback" not in result.stderr
        assert first.proc.poll() is None  # the first node is unharmed
    finally:
        first.kill()


def test_a_wildcard_listener_announces_real_addresses(tmp_path):
    node = Node(tmp_path, "n", env={"MESHNODE_NET_LISTEN": f"/ip4/0.0.0.0/tcp/{free_port()}"})
    try:
        node.start()
        assert node.addresses and not any("0.0.0.0" in a for a in node.addresses)
        assert any("/ip4/127.0.0.1/" in a for a in node.addresses)
        assert all(a.endswith(f"/p2p/{node.peer_id}") for a in node.addresses)
    finally:
        node.kill()


def test_bad_bootstrap_lines_are_reported_and_an_unreachable_peer_is_retried(tmp_path):
    node = Node(tmp_path, "n", env={"MESHNODE_LOG_LEVEL": "info"})
    unreachable = "/ip4/127.0.0.1/tcp/9/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
    (node.home / "bootstrap.txt").write_text(f"# peers\nnot-a-multiaddr\n{unreachable}\n/ip4/1.2.3.4/tcp/1\n")
    try:
        node.start()
        wait_until(lambda: sum(m["value"] for m in node.call("metrics") if m["name"] == "bootstrap_unreachable") >= 2,
                   30, "two rounds of bootstrap retries")
        assert node.proc.poll() is None
    finally:
        node.stop()
        node.kill()
    log = "\n".join(node.drain())
    assert "line 2" in log and "line 4" in log and "no bootstrap peer reachable" in log


def test_peers_are_found_by_interest(tmp_path):
    expert = Node(tmp_path, "expert", env={"MESHNODE_NET_INTERESTS": "astronomy,chess"})
    seeker = Node(tmp_path, "seeker")
    try:
        expert.start()
        seeker.set_bootstrap(expert)
        seeker.start()
        found = wait_until(lambda: [r["did"] for r in (seeker.try_call("find", {"interest": "Chess"}) or [])],
                           30, "the seeker to find a chess provider")
        assert found == [expert.did]
        assert seeker.call("find", {"interest": "knitting"}) == []
    finally:
        expert.kill()
        seeker.kill()
