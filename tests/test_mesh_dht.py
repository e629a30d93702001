"""The DHT as other libp2p peers use it, against a real node process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node

PROBE = Path(__file__).with_name("dht_probe.py")


def find_node(node: Node, peer_id: str) -> dict[str, list[str]]:
    """Ask ``node`` FIND_NODE(peer_id) from a separate libp2p process: {peer id: addresses}."""
    address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
    result = subprocess.run([sys.executable, str(PROBE), address, peer_id], capture_output=True, text=True,
                            timeout=90, env=node.env)
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}


def test_a_node_asked_for_itself_answers_with_its_addresses(tmp_path):
    node = Node(tmp_path, "solo")
    try:
        node.start()
        answer = find_node(node, node.peer_id)
        listening = {a.split("/p2p/")[0] for a in node.addresses}
        assert node.peer_id in answer, answer
        assert set(answer[node.peer_id]) & listening, (answer, listening)
        assert node.stop() == 0
    finally:
        node.kill()
