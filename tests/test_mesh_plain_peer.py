"""A plain libp2p peer (no meshnode protocols) connected to a node: the node does not open
meshnode's protocols to it, and says so once, at debug level (real processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node, metric, wait_until

PLAIN = Path(__file__).with_name("plain_peer.py")


def test_sync_is_not_opened_to_a_peer_that_does_not_speak_it(tmp_path):
    node = Node(tmp_path, "node", env={"MESHNODE_LOG_LEVEL": "debug"})
    try:
        node.start()
        address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
        plain = subprocess.Popen([sys.executable, str(PLAIN), address], env=node.env, text=True,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert plain.stdout.readline().strip() == "connected", plain.stderr.read()[-2000:]
            # more sync rounds than it takes either side of a pair to start a session (OVERDUE_ROUNDS)
            wait_until(lambda: metric(node, "sync_skipped", reason="unsupported") >= 7, 90,
                       "seven sync rounds that skip the plain peer")
        finally:
            plain.stdin.close()
            plain.wait(timeout=30)
        assert node.stop() == 0
        output = node.drain()
        assert not [line for line in output if "/meshnode/" in line and "does not speak" not in line], output
        said = [line for line in output if "does not speak /meshnode/sync" in line]
        assert len(said) == 1 and " DEBUG " in said[0], said
    finally:
        node.kill()
