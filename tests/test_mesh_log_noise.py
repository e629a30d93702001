"""What is expected in a changing mesh is logged at debug; what is left at WARNING or ERROR
is something a person should act on."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from meshharness import Node, metric, plain_peer, wait_until
from meshnode.net.libp2p_fixes import EXPECTED_LIBP2P_MESSAGES, expected_messages_markdown, route_libp2p_logging


PEER = "12D3KooWMbNtDFvsSzEfsEae8v2ZQZ18zXXa85LaAe42ubgYM1Ym"
EXAMPLES = [  # as py-libp2p 0.8.1 logs them
    ("libp2p.host.basic_host", f"Failed to open stream to peer {PEER}:\n  Error: protocols not supported"),
    ("libp2p.protocol_muxer.multiselect_client",
     "MultiselectClient handshake: read failed: fail to read from multiselect communicator"),
    ("libp2p.kad_dht.kad_dht", "Failed to read DHT message from stream: EOF"),
    ("libp2p.kad_dht.peer_routing", f"Failed to open stream to {PEER}: No valid connections available"),
    ("libp2p.kad_dht.peer_routing", f"Error searching for peer {PEER}: timeout"),
    ("libp2p.kad_dht.peer_routing", "Received an invalid-signed-record, skipping peer"),
    ("libp2p.kad_dht.utils", "Failed to update the Certified-Addr-Book"),
    ("libp2p.kad_dht.value_store", f"Failed to store value at peer {PEER}: "),
    ("libp2p.kad_dht.value_store", f"Failed to get value from peer {PEER}: gone"),
    ("libp2p.kad_dht.provider_store", f"Failed to send ADD_PROVIDER to {PEER}"),
    ("libp2p.kad_dht.provider_store", f"Error sending ADD_PROVIDER to {PEER}: gone"),
    ("libp2p.kad_dht.provider_store", f"Failed to get providers from {PEER}: gone"),
    ("libp2p.kad_dht.provider_store", f"Error getting providers from {PEER}: gone"),
    ("libp2p.kad_dht.provider_store", "Received an invalid-signed-record, skipping provider"),
    ("libp2p.network.swarm", f"[ADDCONN_FAIL] add_conn failed for peer {PEER}: LifecycleError('Cannot schedule "
                             "task after service has stopped')\nTraceback (most recent call last):\n ..."),
]
ISSUE_35 = [  # seen in 30 minutes of four nodes with kills and restarts, as py-libp2p 0.8.1 logs them
    ("libp2p.kad_dht.kad_dht", logging.WARNING, "Value not found for key /mn/2c1f0e6a9d4b7c3e8f5a1b2c3d4e5f60"),
    ("libp2p.kad_dht.kad_dht", logging.WARNING,
     "Quorum not met: found 1 valid records, required 3. Returning best value found."),
    ("libp2p.protocol_muxer.multiselect_client", logging.ERROR,
     "MultiselectClient handshake: write failed: fail to write to multiselect communicator"),
]
EXAMPLES += [(name, message) for name, _level, message in ISSUE_35]
MESH_MD = Path(__file__).resolve().parents[1] / "protocols" / "mesh.md"


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root_at():
    """Set the root logger's level for one test and collect what reaches its handlers."""
    root = logging.getLogger()
    saved = root.level
    handler = _Collect()
    root.addHandler(handler)

    def at(level: int) -> _Collect:
        root.setLevel(level)
        handler.records.clear()
        return handler

    yield at
    root.removeHandler(handler)
    root.setLevel(saved)


def test_expected_libp2p_messages_go_to_debug_and_the_rest_stays(root_at):
    route_libp2p_logging()
    seen = root_at(logging.INFO)
    for name, _ in EXPECTED_LIBP2P_MESSAGES:
        logging.getLogger(name).warning("Failed to save value records: disk full")  # not expected anywhere
    assert len(seen.records) == len(EXPECTED_LIBP2P_MESSAGES)
    seen = root_at(logging.INFO)
    for name, start in EXAMPLES:
        logging.getLogger(name).warning("%s", start)
        logging.getLogger(name).error("%s", start)
    assert seen.records == []  # hidden at info level
    logging.getLogger("libp2p.kad_dht.value_store").warning("Failed to save value records: disk full")
    logging.getLogger("libp2p.pubsub.utils").error("Failed to update the Certified-Addr-Book")
    logging.getLogger("libp2p.network.swarm").warning("[ADDCONN_FAIL] add_conn failed for peer X: OSError()")
    assert [(r.name, r.levelname) for r in seen.records] == [
        ("libp2p.kad_dht.value_store", "WARNING"), ("libp2p.pubsub.utils", "ERROR"), ("libp2p.network.swarm", "WARNING")]

    seen = root_at(logging.DEBUG)
    name, message = EXAMPLES[0]
    logging.getLogger(name).error("%s", message)
    assert [(r.name, r.levelname) for r in seen.records] == [(name, "DEBUG")]  # shown at debug level



def test_the_three_messages_of_a_run_with_kills_go_to_debug_and_their_neighbours_stay(root_at):
    """Issue 35: a missing announce, a quorum not met and a handshake whose peer went away are
    normal in a mesh where peers come and go; a key that is no announce's, or another write
    failure, is still shown."""
    route_libp2p_logging()
    seen = root_at(logging.DEBUG)
    for name, level, message in ISSUE_35:
        logging.getLogger(name).log(level, "%s", message)
    assert [(r.name, r.levelname) for r in seen.records] == [(name, "DEBUG") for name, _l, _m in ISSUE_35]
    seen = root_at(logging.INFO)
    for name, level, message in ISSUE_35:
        logging.getLogger(name).log(level, "%s", message)
    assert seen.records == []
    logging.getLogger("libp2p.kad_dht.kad_dht").warning("Value not found for key /other/1234")
    logging.getLogger("libp2p.protocol_muxer.multiselect_client").error("MultiselectClient: write refused")
    assert [(r.name, r.levelname) for r in seen.records] == [
        ("libp2p.kad_dht.kad_dht", "WARNING"), ("libp2p.protocol_muxer.multiselect_client", "ERROR")]


def test_the_classification_table_in_protocols_mesh_md_is_the_code_s():
    text = MESH_MD.read_text(encoding="utf-8")
    start = "<!-- expected libp2p messages: generated from EXPECTED_LIBP2P_MESSAGES, do not edit by hand -->\n"
    shown = text.split(start, 1)[1].split("<!-- end of expected libp2p messages -->", 1)[0]
    assert shown == expected_messages_markdown(), \
        "protocols/mesh.md section 9 is out of date: write the output of python -m meshnode.net.libp2p_fixes there"
    assert shown.count("\n| `libp2p.") == len(EXPECTED_LIBP2P_MESSAGES)
    printed = subprocess.run([sys.executable, "-m", "meshnode.net.libp2p_fixes"], capture_output=True, text=True,
                             check=True).stdout
    assert printed == shown


def test_every_expected_message_has_an_example():
    for name, pattern in EXPECTED_LIBP2P_MESSAGES:
        assert any(n == name and re.match(pattern, m, re.DOTALL) for n, m in EXAMPLES), (name, pattern)


def test_routing_twice_installs_one_filter():
    route_libp2p_logging()
    route_libp2p_logging()
    assert len(logging.getLogger("libp2p.host.basic_host").filters) == 1


def test_a_node_next_to_a_plain_libp2p_peer_logs_no_libp2p_warning(tmp_path):
    """The DHT of a small mesh asks every connected peer, a plain one too: each round used to log
    a 7-line ERROR and two WARNINGs for it."""
    node = Node(tmp_path, "node")
    try:
        node.start()
        with plain_peer(node):
            rounds = metric(node, "maintenance_rounds")
            wait_until(lambda: metric(node, "maintenance_rounds") >= rounds + 2, 120,
                       "two DHT maintenance rounds with the plain peer connected")
        assert node.stop() == 0
        noise = [line for line in node.drain() if " libp2p." in line and (" WARNING " in line or " ERROR " in line)]
        assert noise == []
    finally:
        node.kill()
