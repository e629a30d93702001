"""The agent's controls as actions (meshnode.app.actions: mind, gate, ethics, llm): who decided is the
face the person came through, recorded as the decider and never taken from the arguments; only the
person decides, except what the agent may do with its own commands (its own ethics policies, its
main LLM and the settings that shape its thinking)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from meshnode.app import actor
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.container import now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate.jail import Jail
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.node.run import _Control
from meshnode.records.gate import confirm
from meshnode.records.mind import held, registry
from meshnode.store.service import Store

KEY = NodeKey(bytes([7]) * 32)
T = 1_800_000_000_000
OTHERS = [actor.AGENT, actor.AGENT_TASK, actor.node("gate"), actor.a2a("k1", "bob"), actor.peer(KEY.did, "me")]
PERSON_ONLY = [  # (action, arguments)
    ("mind_release", {}), ("mind_drop", {}), ("mind_pause", {}), ("mind_resume", {}),
    ("drafts", {}), ("drafts_decide", {"decision": "accept"}), ("drafts_edit", {"path": "a.txt", "content": "x"}),
    ("drafts_commit", {}), ("snapshot_rollback", {"id": 1}), ("confirm_decide", {"id": 1, "approve": True}),
    ("gate_reset_limit", {}), ("llm_add", {"name": "m", "url": "http://127.0.0.1:9/v1", "model": "x"}),
    ("llm_remove", {"name": "m"}),
]


class FakeCycle:
    """What the mind actions use of the cycle: who paused it is kept as given."""

    def __init__(self):
        self.paused_by, self.wake = None, SimpleNamespace(set=lambda: None)

    @property
    def paused(self) -> bool:
        return self.paused_by is not None

    def status(self) -> dict:
        return {"mode": "normal", "paused": self.paused, "paused_by": self.paused_by}

    async def pause(self, by: str) -> dict:
        self.paused_by = by
        return self.status()

    async def resume(self, by: str) -> dict:
        self.paused_by = None
        return self.status()

    async def run_released(self) -> list:
        return []


def _held(db, n: int = 2) -> list[int]:
    commands = [SimpleNamespace(cmd_id=f"c{i}", type="note_add", args={"text": str(i)}, description="",
                                target_llm=None, mutating=True) for i in range(n)]
    with db.transaction() as conn:
        return held.hold(conn, 1, commands, "rejected", "validators said no", T)


@pytest.fixture
async def app(tmp_path):
    (tmp_path / "workspace").mkdir()
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, KEY, mesh=SimpleNamespace(), cycle=FakeCycle(), metrics=Metrics(), clock=lambda: T,
                  jail=Jail([(tmp_path / "workspace").resolve()]))


async def test_no_one_but_the_person_decides_and_nothing_changes(app):
    ids = await app.store.write(_held)
    request = await app.store.write(confirm.request, "core", "shell", {"argv": ["rm", "x"]}, "destructive", "why", T)
    await app.store.write(registry.add, registry.Endpoint("m", "http://127.0.0.1:9/v1", "x"))
    for who in OTHERS:
        for name, args in PERSON_ONLY:
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, name, args)
            assert info.value.code == "not_allowed", (who, name)
            assert "only the node's person" in info.value.reason
    assert [r["status"] for r in await dispatch(app, person("cli"), "mind_held", {})] == ["held", "held"]
    assert (await dispatch(app, actor.AGENT, "confirmations", {}))[0]["status"] == "pending"  # reads are open
    assert app.cycle.paused_by is None and [e["id"] for e in await dispatch(app, actor.AGENT, "llms", {})] == ["m"]
    assert ids and request["status"] == "pending"


async def test_the_decider_is_the_face_the_person_came_through(app):
    ids = await app.store.write(_held, 3)
    out = await dispatch(app, person("web"), "mind_release", {"ids": [ids[0]]})
    assert [(r["id"], r["decided_by"]) for r in out["released"]] == [(ids[0], "web")] and out["cognition"] == "on"
    out = await dispatch(app, person("mcp"), "mind_drop", {"ids": [ids[1]]})
    assert [r["decided_by"] for r in out["dropped"]] == ["mcp"]
    assert (await dispatch(app, person("web"), "mind_pause", {}))["paused_by"] == "web"
    assert (await dispatch(app, person("cli"), "mind_resume", {}))["paused"] is False
    request = await app.store.write(confirm.request, "core", "shell", {"argv": ["rm", "x"]}, "destructive", "why", T)
    assert (await dispatch(app, person("mcp"), "confirm_decide", {"id": request["id"], "approve": False}))[
        "decided_by"] == "mcp"
    assert (await dispatch(app, person("web"), "gate_reset_limit", {}))["by"] == "web"
    for name, args in (("mind_release", {"ids": [ids[2]], "by": "agent"}), ("mind_pause", {"by": "web"}),
                       ("confirm_decide", {"id": request["id"], "approve": True, "decided_by": "cli"}),
                       ("mind_release", {"ids": [ids[2]], "actor": "agent"})):
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, person("cli"), name, args)
        assert info.value.code == "bad_request", name
    assert (await dispatch(app, person("cli"), "mind_held", {}))[0]["id"] == ids[2]  # still held


async def test_the_agent_keeps_its_own_ethics_and_llm_choices(app):
    await dispatch(app, person("cli"), "ethics_add", {"name": "care", "principles": ["do no harm"]})
    await dispatch(app, actor.AGENT, "ethics_add", {"name": "mine", "principles": ["cite sources"]})
    assert {p["name"]: p["set_by"] for p in await dispatch(app, actor.AGENT, "ethics", {})} == \
        {"care": "person", "mine": "agent"}
    with pytest.raises(MeshnodeError) as info:
        await dispatch(app, actor.AGENT, "ethics_remove", {"name": "care"})  # never a norm the person set
    assert info.value.code == "refused"
    for who in OTHERS[2:]:
        for name, args in (("ethics_add", {"name": "x", "principles": ["y"]}), ("ethics_remove", {"name": "mine"}),
                           ("llm_select", {"name": "main"}), ("llm_update", {"name": "main", "priority": 1})):
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, name, args)
            assert info.value.code == "not_allowed", (who, name)
    await dispatch(app, actor.AGENT, "ethics_remove", {"name": "mine"})

    await dispatch(app, person("web"), "llm_add", {"name": "main", "url": "http://127.0.0.1:9/v1", "model": "a"})
    await dispatch(app, person("web"), "llm_add", {"name": "judge", "url": "http://127.0.0.1:9/v1", "model": "b",
                                                   "validator": True})
    assert (await dispatch(app, actor.AGENT, "llm_update", {"name": "main", "priority": 5}))["priority"] == 5
    assert await dispatch(app, actor.AGENT, "llm_select", {"name": "judge"}) == {"main": "judge"}
    for args in ({"name": "main", "url": "http://127.0.0.1:10/v1"}, {"name": "judge", "priority": 1}):
        with pytest.raises(MeshnodeError) as info:  # where an LLM is, and a validator's settings: the person's
            await dispatch(app, actor.AGENT, "llm_update", args)
        assert info.value.code in ("bad_args", "refused")
    e = await dispatch(app, person("cli"), "llm_update", {"name": "main", "no_api_key": True, "url": "http://h:1/v1"})
    assert (e["base_url"], e["api_key_env"]) == ("http://h:1/v1", None)


async def test_the_control_socket_s_face_is_the_decider_and_no_argument_names_one(app):
    control = _Control(None, KEY, app.store, None, app.metrics, app=app)
    ids = await app.store.write(_held, 2)
    out = await control.handle("mind_release", {"ids": [ids[0]]}, face="mcp")  # `meshnode mcp` on the socket
    assert out["released"][0]["decided_by"] == "mcp"
    for args in ({"ids": [ids[1]], "by": "web"}, {"ids": [ids[1]], "actor": "agent"}):
        with pytest.raises(MeshnodeError) as info:
            await control.handle("mind_drop", args, face="cli")
        assert info.value.code == "bad_request"
    with pytest.raises(MeshnodeError) as info:  # a face that vouches for someone else: the agent may not
        await control.handle("mind_drop", {"ids": [ids[1]]}, actor=actor.AGENT)
    assert info.value.code == "not_allowed"
    assert (await control.handle("mind_drop", {"ids": [ids[1]]}))["dropped"][0]["decided_by"] == "cli"


def test_the_cli_records_itself_as_the_decider(home, run_cli):
    from meshnode.store import Database

    db = Database(home / "data" / "meshnode.db")
    try:
        ids = _held(db, 1)
        request = confirm.request(db, "core", "shell", {"argv": ["rm", "x"]}, "destructive", "why", now_ms())
    finally:
        db.close()
    assert run_cli("--home", home, "mind", "release", str(ids[0])).returncode == 0
    result = run_cli("--home", home, "confirm", "approve", str(request["id"]))
    assert result.returncode == 0, result.stderr
    db = Database(home / "data" / "meshnode.db")
    try:
        assert held.listing(db, None)[0]["decided_by"] == "cli"
        assert confirm.listing(db, now_ms(), None)[0]["decided_by"] == "cli"
    finally:
        db.close()
    assert run_cli("--home", home, "mind", "release", "--by", "web").returncode == 2  # no flag names who decided
