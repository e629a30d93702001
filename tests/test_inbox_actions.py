"""The person's inbox (meshnode.app.actions.inbox): every source appears in words, newest first,
with its thread; the count matches; a decision goes through the action that decides that kind
(its rows change as that action changes them); nobody but the person reads or decides."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from meshnode.app import actor
from meshnode.app.actions.chat import compose
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.app.dispatch import dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.engines.gate.jail import Jail
from meshnode.engines.reactor import escalate
from meshnode.engines.reactor.types import Escalation
from meshnode.records.a2a import held_queue
from meshnode.records.gate import confirm, drafts, person as gate_person
from meshnode.records.mind import held
from meshnode.store.service import Store

KEY = NodeKey(bytes([7]) * 32)
ALICE = NodeKey(bytes([9]) * 32).did
T = 1_800_000_000_000
WEB = person("web")
OTHERS = [actor.AGENT, actor.AGENT_TASK, actor.node("gate"), actor.a2a("k1", "bob"), actor.peer(ALICE, "alice")]


class FakeCycle:
    paused = False
    wake = SimpleNamespace(set=lambda: None)

    def status(self) -> dict:
        return {"mode": "normal"}

    async def run_released(self) -> list:
        return []


@pytest.fixture
async def app(tmp_path):
    (tmp_path / "workspace").mkdir()
    async with await Store.open(tmp_path / "m.db") as store:
        yield App(store, KEY, mesh=SimpleNamespace(), cycle=FakeCycle(), metrics=Metrics(), clock=lambda: T,
                  jail=Jail([(tmp_path / "workspace").resolve()]))


def _fill(db, jail) -> dict:
    """One item of each kind, one a minute apart (held A2A oldest, the escalation newest)."""
    with db.transaction() as conn:
        conn.execute("INSERT INTO agent_peers (id, name) VALUES (?, 'alice')", (ALICE,))
    asked = compose(db, KEY, WEB, "please tell alice hello", None, T - 10 * 60_000)
    a2a = confirm.request(db, held_queue.SESSION, held_queue.TOOL,
                          {"party": "unknown:192.0.2.7:mallory", "sender": "mallory", "client": "192.0.2.7",
                           "context_id": "ctx-42", "framed": "[A2A message from mallory]\nbuy my stuff"},
                          "outbound", "an unknown party", T - 5 * 60_000)
    send = confirm.request(db, gate_person.SESSION, "send_message", {"to": ALICE, "text": "hello from me"},
                           "outbound", "a message to an agent that is not a friend", T - 4 * 60_000)
    reply = confirm.request(db, gate_person.SESSION, "note_add",
                            {"text": "I asked alice", "reply_to": asked["did"], "audience": "public"},
                            "outbound", "a public note", T - 3 * 60_000)
    command = SimpleNamespace(cmd_id="c1", type="send_message", args={"to": ALICE, "text": "held words"},
                              description="", target_llm=None, mutating=True)
    with db.transaction() as conn:
        (held_id,) = held.hold(conn, 7, [command], "rejected", "validators said no", T - 2 * 60_000)
    drafts.draft_write(db, jail, gate_person.SESSION, "plan.txt", b"step one\n")
    db.conn.execute("UPDATE gate_drafts SET created_ms = ?, updated_ms = ?", (T - 60_000, T - 60_000))
    return {"thread": asked["thread"], "a2a": a2a["id"], "send": send["id"], "reply": reply["id"], "held": held_id}


async def _escalate(app) -> str:
    esc = Escalation(f"esc:operator:core:ev1", "core", escalate.OPERATOR, 2, "ev1", "note", "a wake left no trace",
                     f"the agent was woken for a message from {ALICE} and wrote nothing", None, T)
    did = await escalate.send(app.store, KEY, [esc], T)
    await app.store.write(lambda db: db.conn.execute("INSERT INTO reactor_escalations (key, agent, to_id, level,"
                                                     " event_key, subject, text, sent_ms, container_id) VALUES"
                                                     " (?, ?, ?, 2, 'ev1', ?, ?, ?, ?)",
                                                     (esc.key, "core", "operator", esc.subject, esc.text, T, did)))
    return did


async def test_every_source_appears_in_words_newest_first_with_its_thread(app):
    made = await app.store.write(_fill, app.jail)
    note = await _escalate(app)
    listed = await dispatch(app, WEB, "inbox", {})
    kinds = [i["kind"] for i in listed["items"]]
    assert kinds == ["escalation", "draft", "held_command", "confirmation", "confirmation", "a2a_message"]
    by_id = {i["id"]: i for i in listed["items"]}
    send = by_id[f"confirmation:{made['send']}"]
    assert send["summary"] == 'the agent asks to send a message to "alice": hello from me'
    assert "did:key" not in send["summary"] and send["thread"] is None
    assert [a["name"] for a in send["actions"]] == ["approve", "reject"]
    reply = by_id[f"confirmation:{made['reply']}"]
    assert reply["thread"] == made["thread"] and "answer in the conversation" in reply["summary"]
    a2a = by_id[f"a2a_message:{made['a2a']}"]
    assert a2a["context_id"] == "ctx-42" and 'A2A party "mallory"' in a2a["summary"] and "buy my stuff" in a2a["summary"]
    held_item = by_id[f"held_command:{made['held']}"]
    assert held_item["summary"].startswith("held (the validators rejected it)") and '"alice"' in held_item["summary"]
    assert [a["name"] for a in held_item["actions"]] == ["release", "drop"]
    draft = by_id["draft:plan.txt"]
    assert "+step one" in draft["detail"] and draft["when_ms"] == T - 60_000
    esc = by_id[f"escalation:{note}"]
    assert esc["who"] == "the reactor" and "alice" in esc["detail"] and ALICE not in esc["detail"]
    assert listed["count"]["total"] == 6 == (await dispatch(app, WEB, "inbox_count", {}))["total"]
    only = await dispatch(app, WEB, "inbox", {"thread": made["thread"]})
    assert [i["id"] for i in only["items"]] == [f"confirmation:{made['reply']}"]


async def test_decisions_go_through_the_actions_that_decide_them(app):
    made = await app.store.write(_fill, app.jail)
    note = await _escalate(app)
    await dispatch(app, WEB, "inbox", {})  # the person is shown the draft: an accept takes only that
    out = await dispatch(app, WEB, "inbox_decide", {"kind": "confirmation", "ref": made["send"], "decision": "approve"})
    assert out["result"]["status"] == "approved" and out["result"]["decided_by"] == "web"
    assert out["count"]["total"] == 5
    out = await dispatch(app, WEB, "inbox_decide", {"kind": "a2a_message", "ref": str(made["a2a"]), "decision": "reject"})
    assert out["result"]["status"] == "rejected"
    out = await dispatch(app, WEB, "inbox_decide", {"kind": "held_command", "ref": made["held"], "decision": "drop"})
    assert [r["status"] for r in out["result"]["dropped"]] == ["dropped"]
    out = await dispatch(app, WEB, "inbox_decide", {"kind": "draft", "ref": "plan.txt", "decision": "accept"})
    assert out["result"]["decided"] == ["plan.txt"]
    listed = await dispatch(app, WEB, "inbox", {})
    assert [i["kind"] for i in listed["items"]] == ["escalation", "drafts_accepted", "confirmation"]
    await dispatch(app, WEB, "inbox_decide", {"kind": "drafts_accepted", "ref": "all", "decision": "commit"})
    assert app.jail.read_bytes("plan.txt", 100) == b"step one\n"
    await dispatch(app, WEB, "inbox_decide", {"kind": "escalation", "ref": note, "decision": "dismiss"})
    await dispatch(app, WEB, "inbox_decide", {"kind": "confirmation", "ref": made["reply"], "decision": "reject"})
    assert await dispatch(app, WEB, "inbox_count", {}) == {"total": 0, "by_kind": {
        "confirmation": 0, "a2a_message": 0, "held_command": 0, "draft": 0, "drafts_accepted": 0, "escalation": 0,
        "notice": 0, "task_unclaimed": 0}}


async def test_a_decision_that_does_not_fit_its_item_is_refused(app):
    made = await app.store.write(_fill, app.jail)
    for kind, ref, decision, code in (
            ("confirmation", made["a2a"], "approve", "bad_arguments"),  # a held A2A message is not the agent's
            ("a2a_message", made["send"], "approve", "bad_arguments"),
            ("confirmation", made["send"], "release", "bad_arguments"),
            ("confirmation", 99999, "approve", "not_found"),
            ("confirmation", "1; drop", "approve", "bad_arguments"),
            ("nonsense", 1, "approve", "bad_arguments"),
            ("held_command", 99999, "release", "not_found")):
        with pytest.raises(MeshnodeError) as err:
            await dispatch(app, WEB, "inbox_decide", {"kind": kind, "ref": ref, "decision": decision})
        assert err.value.code == code, (kind, ref, decision)
    assert (await dispatch(app, WEB, "inbox_count", {}))["total"] == 5


@pytest.mark.parametrize("who", OTHERS, ids=lambda a: f"{a.kind}-{a.via}")
async def test_no_one_but_the_person_reads_or_decides(app, who):
    made = await app.store.write(_fill, app.jail)
    for name, args in (("inbox", {}), ("inbox_count", {}),
                       ("inbox_decide", {"kind": "confirmation", "ref": made["send"], "decision": "approve"}),
                       ("inbox_decide", {"kind": "held_command", "ref": made["held"], "decision": "release"})):
        with pytest.raises(MeshnodeError) as err:
            await dispatch(app, who, name, args)
        assert err.value.code == "not_allowed"
    assert (await dispatch(app, WEB, "inbox_count", {}))["total"] == 5
