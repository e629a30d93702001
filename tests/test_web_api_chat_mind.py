"""The conversation and mind routes over real HTTP (a `meshnode run` with its web notebook and a
scripted LLM): a message reaches the agent's next prompt in full (context 6a), its scripted
`note_add reply_to=<id>` comes back in the thread as the agent's side; ticks are traced and
shown; pause and resume; bad input is a typed 4xx that changes nothing."""

from __future__ import annotations

import json

import pytest

from llmharness import command_block, json_lines, prompt_section
from meshharness import wait_until
from webharness import agent_node, refused, web_node

QUESTION = "what is 2+2? (zebra-7)"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("chatmind"), ["Nothing new; I wait for the person."]) as node:
        yield node


def test_a_message_reaches_the_agent_in_full_and_its_reply_comes_back_in_the_thread(web):
    paused = web.post("/api/mind/pause")
    assert paused["paused"] is True and paused["paused_by"] == "web"
    sent = web.post("/api/threads", {"text": QUESTION})
    assert sent["woke"] is False  # paused: the message waits
    tid, did = sent["thread"], sent["did"]
    assert did.startswith("did:hmp:container:uEi" + tid) and len(tid) == 16
    web.llm.reply_when(QUESTION, "The person asks a sum. " + command_block(
        {"cmd_id": "answer1", "type": "note_add", "args": {"text": "4", "reply_to": did}}))
    seen = len(web.llm.seen())
    assert web.post("/api/mind/resume")["paused"] is False
    wait_until(lambda: len(web.get(f"/api/threads/{tid}")["messages"]) == 2, 30, "the agent's reply")
    person, agent = web.get(f"/api/threads/{tid}")["messages"]
    assert (person["did"], person["side"], person["text"], person["read"]) == (did, "person", QUESTION, True)
    assert agent["side"] == "agent" and agent["text"] == "4" and agent["in_reply_to"] == [did]
    assert agent["time_ms"] >= person["time_ms"]
    # the prompt that carried it had the message's text in context 6a, not only its id
    asked = next(r for r in web.llm.seen()[seen:] if QUESTION in r["messages"][1]["content"])
    shown = asked["messages"][1]["content"]
    [message] = json_lines(prompt_section(shown, "Messages from the person (context 6a)", required=True))
    assert message == {"id": did, "from": "the person", "via": "web", "thread": tid, "time": message["time"],
                       "text": QUESTION}
    assert did not in prompt_section(shown, "Incoming notes (context 6)", required=True)
    [row] = [t for t in web.get("/api/threads") if t["thread"] == tid]
    assert row["count"] == 2 and row["unread_by_agent"] == 0 and row["last_side"] == "agent"
    assert row["title"] == QUESTION and row["last_text"] == "4"
    # one more message in the same thread: it wakes the agent (not paused now)
    more = web.post(f"/api/threads/{tid}", {"text": "and 3+3?"})
    assert more["thread"] == tid and more["woke"] is True
    assert [m["text"] for m in web.get(f"/api/threads/{tid}")["messages"]] == [QUESTION, "4", "and 3+3?"]
    # the tick that answered is traced: its contexts (6a among them) and the reply command's result
    ticks = web.get("/api/mind/ticks", limit=500)
    assert ticks and ticks[0]["tick"] > ticks[-1]["tick"]
    shown = [web.get(f"/api/mind/ticks/{t['tick']}") for t in ticks if t["llm_id"] == "main"]
    answering = next(t for t in shown if any(c["name"] == "cmd:answer1" for c in t["commands"]))
    assert "Messages from the person (context 6a)" in [c["title"] for c in answering["contexts"]]
    [cmd] = [c for c in answering["commands"] if c["name"] == "cmd:answer1"]
    assert cmd["status"] == "ok" and cmd["value"]["result"]["in_reply_to"] == did
    assert answering["answer"].startswith("The person asks a sum.")


def test_mind_state_llms_pause_resume_and_tick(web):
    mind = web.get("/api/mind")
    assert mind["paused"] is False and mind["mode"] in ("normal", "isolated")
    assert [(m["id"], m["model"]) for m in mind["llms"]] == [("main", "scripted")]
    llms = web.get("/api/llms")
    assert [(m["id"], m["model"], m["uses_api_key"], m["error"]) for m in llms] == [("main", "scripted", False, None)]
    assert not any("key" in k and k != "uses_api_key" for k in llms[0])
    assert web.post("/api/mind/pause")["paused"] is True
    assert web.get("/api/status")["cognition"]["paused"] is True
    # tick now while paused: refused with its reason, never an ok that does nothing
    assert "resume" in refused(web.raw_post("/api/mind/tick"), 409, "paused")
    ticks = web.get("/api/mind")["ticks"]
    assert web.post("/api/mind/resume")["paused"] is False
    wait_until(lambda: web.get("/api/mind")["ticks"] > ticks, 30, "a tick after the resume")
    assert web.get("/api/mind/held", status="all") == []


def counts(web) -> tuple:
    status = web.get("/api/status")
    return status["counts"], web.get("/api/mind/held", status="all")


@pytest.mark.parametrize("method, path, body, status, code", [
    ("POST", "/api/threads", {}, 400, "bad_arguments"),
    ("POST", "/api/threads", {"text": 5}, 400, "bad_arguments"),
    ("POST", "/api/threads", {"text": "   "}, 400, "empty_note"),
    ("POST", "/api/threads", {"text": "hi", "thread": "x"}, 400, "bad_arguments"),
    ("POST", "/api/threads", {"text": "x" * (64 * 1024 + 1)}, 400, "bad_arguments"),
    ("POST", "/api/threads/AAAAAAAAAAAAAAAA", {"text": "hi"}, 404, "thread_not_found"),
    ("POST", "/api/threads/bad!thread", {"text": "hi"}, 400, "bad_thread"),
    ("GET", "/api/threads/AAAAAAAAAAAAAAAA", None, 404, "thread_not_found"),
    ("GET", "/api/threads", {"limit": "0"}, 400, "bad_arguments"),
    ("GET", "/api/threads", {"before": "soon"}, 400, "bad_arguments"),
    ("GET", "/api/mind/ticks/abc", None, 400, "bad_arguments"),
    ("GET", "/api/mind/ticks/999999", None, 404, "tick_not_found"),
    ("GET", "/api/mind/held", {"status": "nope"}, 400, "bad_arguments"),
    ("POST", "/api/mind/held/release", {"ids": ["x"]}, 400, "bad_arguments"),
    ("POST", "/api/mind/held/release", {"ids": "all"}, 400, "bad_arguments"),
    ("POST", "/api/mind/held/drop", {"ids": [True]}, 400, "bad_arguments"),
    ("POST", "/api/mind/held/drop", {"ids": [12345]}, 404, "not_found"),
    ("POST", "/api/mind/pause", {"by": "someone"}, 400, "bad_arguments"),
])
def test_bad_input_is_a_typed_error_and_changes_nothing(web, method, path, body, status, code):
    before = counts(web)
    r = web.raw_post(path, body) if method == "POST" else web.raw_get(path, **(body or {}))
    assert r.status_code == status, r.text
    answer = r.json()
    assert answer["ok"] is False and answer["code"] == code and answer["reason"]
    assert counts(web) == before


def test_with_cognition_off_the_mind_routes_say_so(tmp_path):
    with web_node(tmp_path) as web:
        for path in ("/api/mind/pause", "/api/mind/resume", "/api/mind/tick"):
            r = web.raw_post(path)
            refused(r, 409, "cognition_off")
        sent = web.post("/api/threads", {"text": "anyone there?"})
        assert sent["woke"] is False and web.get(f"/api/threads/{sent['thread']}")["messages"][0]["read"] is False
