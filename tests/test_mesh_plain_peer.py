"""A plain libp2p peer (no meshnode protocols) connected to a node: the node does not open
meshnode's protocols to it, and says so once, at debug level (real processes)."""

from __future__ import annotations

from meshharness import Node, metric, plain_peer, wait_until
from meshnode.base.identity.did import peer_id_to_did


def test_sync_is_not_opened_to_a_peer_that_does_not_speak_it(tmp_path):
    # sync rounds every 0.5 s, not the harness's 2 s: the seven rounds below are what the test waits for
    node = Node(tmp_path, "node", env={"MESHNODE_LOG_LEVEL": "debug", "MESHNODE_NET_SYNC_SECONDS": "0.5"})
    try:
        node.start()
        with plain_peer(node) as peer_id:
            # more sync rounds than it takes either side of a pair to start a session (OVERDUE_ROUNDS)
            wait_until(lambda: metric(node, "sync_skipped", reason="unsupported") >= 7, 90,
                       "seven sync rounds that skip the plain peer")
            # asked by a person, the node says why, without opening the protocol
            asked = node.run_cli("sync", peer_id_to_did(peer_id))
            assert asked.returncode == 1 and "does not speak /meshnode/sync/1.0.0" in asked.stderr, asked
            assert "Traceback" not in asked.stderr
        assert node.stop() == 0
        output = node.drain()
        assert not [line for line in output if "/meshnode/" in line and "does not speak" not in line], output
        said = [line for line in output if "does not speak /meshnode/sync" in line]
        assert len(said) == 1 and " DEBUG " in said[0], said
    finally:
        node.kill()
