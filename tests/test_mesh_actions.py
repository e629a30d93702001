"""The running node's mesh and housekeeping as actions (meshnode.app.actions: peers, containers,
meshconsensus, children, node_status, reactor; reputation_round): changing the node itself (its
friends, its children, the mesh's rounds, containers pushed or fetched) is the person's or the
node's; the agent keeps what its own commands did (proposing a value, syncing, spawning once a
person approved); what needs the network says so when no node runs, and the rest works on the
home's database."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from meshnode.app import actor
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net.liveness import LivenessTracker, Thresholds
from meshnode.node.run import _Control
from meshnode.records import family
from meshnode.records.family import ChildRecord
from meshnode.store.peers import set_liveness
from meshnode.store.service import Store

KEY = NodeKey(bytes([7]) * 32)
CHILD, FRIEND = NodeKey(bytes([8]) * 32), NodeKey(bytes([9]) * 32).did
T = 1_800_000_000_000
NET = {"quiet_after_seconds": 25, "stale_after_seconds": 60, "dead_after_seconds": 300}
OUTSIDE = [actor.a2a("k1", "bob"), actor.peer(FRIEND, "friend")]
PERSON_OR_NODE_ONLY = [  # (action, arguments)
    ("friend", {"did": FRIEND}), ("child_remove", {"did": CHILD.did}), ("spawn", {"kind": "newborn"}),
    ("consensus_next_committee", {}), ("reputation_round", {}), ("send", {"did": FRIEND, "container": ""}),
    ("fetch", {"did": FRIEND, "container_did": "x"}),
]


class FakeMesh:
    """Records what the actions ask of the network."""

    gmp = None  # as a Mesh whose GMP service has not subscribed: the actions push nothing

    def __init__(self):
        self.asked: list[tuple] = []
        self.liveness = LivenessTracker(Thresholds(25_000, 60_000, 300_000))  # it heard no one

    async def consensus_submit(self, value: bytes, wait_s: float = 0.0) -> dict:
        self.asked.append(("consensus_submit", value, wait_s))
        return {"status": "submitted"}

    async def sync_with(self, did: str) -> dict:
        self.asked.append(("sync_with", did))
        return {"did": did}

    async def refresh_known(self) -> None:
        self.asked.append(("refresh_known",))

    def __getattr__(self, name):  # anything else asked of the network is a test failure
        raise AssertionError(f"the mesh was asked {name}")


class FakeSpawner:
    def __init__(self):
        self.asked: list[tuple] = []

    async def spawn(self, app, ask: dict, answer_seconds) -> dict:
        self.asked.append((ask, answer_seconds))
        return {"did": "did:key:child", "by": ask["by"]}


@pytest.fixture
async def store(tmp_path):
    async with await Store.open(tmp_path / "m.db") as store:
        await store.write(family.record_child, ChildRecord(did=CHILD.did, peer_id=CHILD.peer_id, name="kid",
                                                           kind="newborn", depth=1, autostart="none"), T - 3_600_000)
        yield store


@pytest.fixture
def app(store):
    return App(store, KEY, mesh=FakeMesh(), metrics=Metrics(), clock=lambda: T, spawner=FakeSpawner(),
               config=SimpleNamespace(values={"net": NET}, home="/nowhere"))


async def test_only_the_person_or_the_node_changes_the_node_and_nothing_changes_otherwise(app):
    for who in [actor.AGENT, actor.AGENT_TASK, *OUTSIDE]:
        for name, args in PERSON_OR_NODE_ONLY:
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, name, args)
            assert info.value.code == "not_allowed", (who, name)
            assert "is for the person or this node only" in info.value.reason
    assert await dispatch(app, actor.AGENT, "friends", {}) == [CHILD.did]  # reads are open (a child is a friend)
    assert [c["state"] for c in await dispatch(app, actor.a2a("k1"), "children", {})] == ["active"]
    assert app.mesh.asked == [] and app.spawner.asked == []
    assert await dispatch(app, actor.node("reactor"), "friend", {"did": FRIEND}) == {"did": FRIEND, "friend": True}
    assert (await dispatch(app, person("web"), "child_remove", {"did": CHILD.did}))["state"] == "removed"
    assert await dispatch(app, person("cli"), "friends", {}) == [FRIEND]  # a removed child is no longer one
    # a new friend is known to the admission at once, and so is a removed child no longer one (issue 35)
    assert app.mesh.asked == [("refresh_known",), ("refresh_known",)]


async def test_the_agent_proposes_and_syncs_as_it_did_and_an_outside_party_does_not(app):
    from meshnode.engines.cognition import mesh_commands
    from meshnode.engines.cognition.commands import Command

    out = await mesh_commands.run(app.mesh, app.store, KEY, T, Command("c1", "consensus_propose", {"value": "v"}))
    assert out["status"] == "ok" and out["result"] == {"status": "submitted"}
    out = await mesh_commands.run(app.mesh, app.store, KEY, T, Command("c2", "sync_request", {"peer": FRIEND}))
    assert out["status"] == "ok" and out["result"] == {"did": FRIEND}
    assert app.mesh.asked == [("consensus_submit", b"v", 0), ("sync_with", FRIEND)]
    for who in OUTSIDE:
        for name, args in (("consensus_propose", {"value": "v"}), ("sync", {"did": FRIEND})):
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, name, args)
            assert info.value.code == "not_allowed", (who, name)
    assert len(app.mesh.asked) == 2


async def test_a_spawn_is_labelled_by_who_asked_and_the_agent_s_needs_the_person_s_approval(app):
    assert (await dispatch(app, person("web"), "spawn", {"kind": "newborn", "answer_seconds": 30}))["by"] == "web"
    out = await dispatch(app, actor.AGENT, "spawn", {"kind": "newborn", "name": "scout", "start": True},
                         approved_by=actor.approver(None))
    assert out["by"] == "agent" and app.spawner.asked[-1][1] is None  # the gate waits until it is done
    with pytest.raises(MeshnodeError) as info:  # an approval by anyone but the person is none
        await dispatch(app, actor.AGENT, "spawn", {"kind": "newborn"}, approved_by=actor.node("gate"))
    assert info.value.code == "not_allowed"
    with pytest.raises(MeshnodeError) as info:  # no argument says who asked
        await dispatch(app, person("cli"), "spawn", {"kind": "newborn", "by": "agent"})
    assert info.value.code == "bad_request" and len(app.spawner.asked) == 2


async def test_on_the_home_the_network_s_actions_say_no_node_runs_and_the_database_s_work(store):
    home = App(store, None, clock=lambda: T, config=SimpleNamespace(values={"net": NET}, home="/h"))
    for name, args in (("ping", {"did": FRIEND}), ("consensus_status", {}), ("formation", {}),
                       ("sync", {"did": FRIEND}), ("reputation_round", {}), ("metrics", {}),
                       ("reactor_status", {}), ("spawn", {"kind": "newborn"})):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(home, person("cli"), name, args)
        assert info.value.code == "node_not_running", name
    [child] = await dispatch(home, person("cli"), "children", {})
    assert child["did"] == CHILD.did and child["liveness"] == "unknown"  # never heard: nothing to age
    await store.write(set_liveness, CHILD.did, state="ok", last_heard_ms=T - 3_600_000, last_seq=1, now_ms=T - 3_600_000)
    assert (await dispatch(home, person("cli"), "child_show", {"did": "kid"}))["liveness"] == "dead"  # aged
    assert await dispatch(home, person("cli"), "friend", {"did": FRIEND}) == {"did": FRIEND, "friend": True}
    assert await dispatch(home, person("cli"), "peers", {}) and await dispatch(home, person("cli"), "friends", {})


async def test_on_the_home_peers_are_as_last_known_never_online(store):
    """Issue 35, defect 2: a node killed while a friend was ``ok`` left it ``ok`` and ``online`` in its table;
    with no node running, ``peers`` ages the liveness by the silence since the friend was heard, and no
    peer is online or connected to a stopped node."""
    home = App(store, None, clock=lambda: T, config=SimpleNamespace(values={"net": NET}, home="/h"))
    await dispatch(home, person("cli"), "friend", {"did": FRIEND})
    await store.write(set_liveness, FRIEND, state="ok", last_heard_ms=T - 3_600_000, last_seq=1, now_ms=T - 3_600_000)
    [row] = [r for r in await dispatch(home, person("cli"), "peers", {}) if r["did"] == FRIEND]
    assert (row["liveness"], row["status"], row["connected"]) == ("dead", "offline", False)
    await store.write(set_liveness, FRIEND, state="ok", last_heard_ms=T - 30_000, last_seq=2, now_ms=T - 30_000)
    [row] = [r for r in await dispatch(home, person("cli"), "peers", {}) if r["did"] == FRIEND]
    assert (row["liveness"], row["status"]) == ("quiet", "offline")  # aged by 30 s of silence, as last known


async def test_the_control_socket_counts_times_and_answers_a_bug_as_an_internal_error(app):
    class Broken:
        async def status(self):
            raise KeyError("a bug")

    app.reactor = Broken()
    control = _Control(None, KEY, app.store, None, app.metrics, app=app)
    with pytest.raises(MeshnodeError) as info:
        await control.handle("reactor_status", {})
    assert info.value.code == "internal_error" and "KeyError" in info.value.reason
    with pytest.raises(MeshnodeError) as info:
        await control.handle("no_such_command", {})
    assert info.value.code == "unknown_command"
    with pytest.raises(MeshnodeError) as info:  # the socket's face is the person's: the agent's may not
        await control.handle("friend", {"did": FRIEND}, actor=actor.AGENT)
    assert info.value.code == "not_allowed"
    counted = {(m["name"], m["labels"].get("cmd")): m["value"] for m in app.metrics.snapshot()}
    assert counted[("control_requests", "reactor_status")] == 1 and counted[("control_internal_errors", None)] == 1
