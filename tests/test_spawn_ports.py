"""Ports for a child: never one a listener holds, never one promised to another child."""

from __future__ import annotations

import socket

import pytest

from meshnode.engines.spawn import ports
from meshnode.base.errors import SpawnError
from spawnlab import fake_seed, root, spawn_parent  # noqa: F401 (fixtures)


@pytest.fixture
def occupied():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def offering_first(monkeypatch, port: int) -> list[int]:
    """The kernel 'offers' ``port`` first on every free_port call (as it may after a race), then real ones."""
    real, offered = ports._kernel_port, []

    def kernel_port(family, host):
        choice = port if not offered or offered[-1] != port else real(family, host)
        offered.append(choice)
        return choice

    monkeypatch.setattr(ports, "_kernel_port", kernel_port)
    return offered


def test_a_port_a_listener_holds_is_never_chosen(monkeypatch, occupied):
    offered = offering_first(monkeypatch, occupied)
    chosen = ports.free_port("127.0.0.1")
    assert offered[0] == occupied and chosen != occupied  # re-checked by binding, not trusted
    with socket.socket() as s:
        s.bind(("127.0.0.1", chosen))  # and it really is free


def test_an_avoided_port_is_never_chosen(monkeypatch):
    promised = ports.free_port("127.0.0.1")
    offering_first(monkeypatch, promised)
    assert ports.free_port("127.0.0.1", {promised}) != promised


def test_no_free_port_is_a_typed_error(monkeypatch, occupied):
    monkeypatch.setattr(ports, "_kernel_port", lambda family, host: occupied)
    with pytest.raises(SpawnError) as err:
        ports.free_port("127.0.0.1")
    assert err.value.code == "no_free_port"
    with pytest.raises(SpawnError) as err:
        ports.free_port("192.0.2.1")  # not this host's address: cannot bind at all
    assert err.value.code == "no_free_port"


def test_two_children_never_share_a_port(monkeypatch, spawn_parent):
    """The kernel offers the same port to both spawns: the second child's ports avoid the first's."""
    first_offer = ports.free_port("127.0.0.1")
    offering_first(monkeypatch, first_offer)
    a, b = spawn_parent.spawn("newborn"), spawn_parent.spawn("newborn")
    used = [a.listen[0].split("/")[4], a.web_listen.rsplit(":", 1)[1], b.listen[0].split("/")[4],
            b.web_listen.rsplit(":", 1)[1]]
    assert len(set(used)) == 4, used
    assert str(first_offer) in used
    assert not set(used) & {str(p) for p in spawn_parent.ports()}
