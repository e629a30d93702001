"""What is expected in a changing mesh is logged at debug; what is left at WARNING or ERROR
is something a person should act on."""

from __future__ import annotations

import logging

import pytest

from meshharness import Node, metric, plain_peer, wait_until
from meshnode.net.libp2p_fixes import EXPECTED_LIBP2P_MESSAGES, route_libp2p_logging


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
    for name, start in EXPECTED_LIBP2P_MESSAGES:
        logging.getLogger(name).warning("%s 12D3KooW...: gone", start)
        logging.getLogger(name).error("%s 12D3KooW...: gone", start)
    assert seen.records == []  # hidden at info level
    logging.getLogger("libp2p.kad_dht.value_store").warning("Failed to save value records: disk full")
    logging.getLogger("libp2p.pubsub.utils").error("Failed to update the Certified-Addr-Book")
    assert [(r.name, r.levelname) for r in seen.records] == [
        ("libp2p.kad_dht.value_store", "WARNING"), ("libp2p.pubsub.utils", "ERROR")]

    seen = root_at(logging.DEBUG)
    name, start = next(iter(EXPECTED_LIBP2P_MESSAGES))
    logging.getLogger(name).error("%s X", start)
    assert [(r.name, r.levelname) for r in seen.records] == [(name, "DEBUG")]  # shown at debug level


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
