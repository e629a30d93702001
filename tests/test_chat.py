"""Conversations (meshnode/store/chat.py) against a real database: threads, one thread, the person's
messages, the agent's replies with reply_to (the executor's note_add), and context 6a."""

from __future__ import annotations

import json

import pytest

from meshnode.store import chat
from meshnode.app.actions import chat as chat_actions
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import person
from meshnode.app.context import App
from meshnode.engines.cognition import contexts, executor
from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.store import Database
from llmharness import json_lines, prompt_section

T0 = 1_800_000_000_000
MCP = person("mcp")


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "chat.db")
    yield d
    d.close()


KEY = NodeKey(bytes(32))
OTHER = NodeKey(bytes([1]) * 32)


def compose(db, key: NodeKey, text: str, thread: str | None, at: int) -> dict:
    """The person's message through the web (app.actions.chat)."""
    return chat_actions.compose(db, key, person("web"), text, thread, at)


def agent_reply(db, text: str, reply_to: str, at: int, cmd_id: str = "r1") -> dict:
    return executor.run(db, KEY, at, Command(cmd_id, "note_add", {"text": text, "reply_to": reply_to}))


def read_of(db, did: str) -> int:
    return db.conn.execute("SELECT read FROM notes WHERE container_did = ?", (did,)).fetchone()[0]


def prompt(db) -> str:
    return contexts.build(db, now_ms=T0 + 10**6, tick=1, recent_k=5, mode="normal", llm_id="x",
                          own_did=KEY.did)[1]["content"]


def test_a_conversation_person_then_agent_then_person(db):
    first = compose(db, KEY, "what is 2+2?", None, T0)
    tid = first["thread"]
    assert tid == first["did"][len(chat.PREFIX):][:16] and len(tid) == 16
    result = agent_reply(db, "4", first["did"], T0 + 1000)
    assert result["status"] == "ok", result
    assert result["result"]["thread"] == tid and result["result"]["in_reply_to"] == first["did"]
    assert read_of(db, first["did"]) == 1  # the reply marked the person's message read
    second = compose(db, KEY, "and 3+3?", tid, T0 + 2000)
    assert second["thread"] == tid
    t = chat.thread(db, KEY.did, tid)
    assert [(m["side"], m["text"], m["read"]) for m in t["messages"]] == [
        ("person", "what is 2+2?", True), ("agent", "4", True), ("person", "and 3+3?", False)]
    assert t["messages"][1]["in_reply_to"] == [first["did"]] and t["messages"][0]["in_reply_to"] == []
    assert t["messages"][0]["time_ms"] == T0
    # the listing: one thread, its title, its last message, one unread by the agent
    [row] = chat.threads(db, KEY.did)
    assert row == {"thread": tid, "title": "what is 2+2?", "last_side": "person", "last_text": "and 3+3?",
                   "last_ms": T0 + 2000, "unread_by_agent": 1, "count": 3, "archived": False}
    # paging: the newest message before a time, oldest first
    assert [m["text"] for m in chat.thread(db, KEY.did, tid, limit=1, before=T0 + 2000)["messages"]] == ["4"]
    assert chat.threads(db, KEY.did, before=T0 + 2000) == []


def test_threads_are_newest_first_and_apart(db):
    a = compose(db, KEY, "first thread", None, T0)["thread"]
    b = compose(db, KEY, "second thread", None, T0 + 10)["thread"]
    compose(db, KEY, "back to the first", a, T0 + 20)
    assert [r["thread"] for r in chat.threads(db, KEY.did)] == [a, b]
    assert [r["count"] for r in chat.threads(db, KEY.did)] == [2, 1]
    assert [r["thread"] for r in chat.threads(db, KEY.did, limit=1)] == [a]
    # a note outside conversations, or another node's, is in no thread
    db.put_container(make_note(KEY, "a plain note", now_ms=T0 + 30, topic="chatter"), received_at_ms=T0)
    db.put_container(make_note(OTHER, "their chat", now_ms=T0 + 40, topic="chat"), received_at_ms=T0)
    assert len(chat.threads(db, KEY.did)) == 2


def test_bad_and_unknown_threads_are_typed_errors_and_change_nothing(db):
    before = db.counts()
    with pytest.raises(MeshnodeError) as bad:
        compose(db, KEY, "hello", "../etc/passwd!!", T0)
    assert bad.value.code == "bad_thread"
    with pytest.raises(MeshnodeError) as unknown:
        compose(db, KEY, "hello", "A" * 16, T0)
    assert unknown.value.code == "thread_not_found" and "AAAA" in unknown.value.reason
    with pytest.raises(MeshnodeError) as missing:
        chat.thread(db, KEY.did, "B" * 16)
    assert missing.value.code == "thread_not_found"
    with pytest.raises(MeshnodeError) as empty:
        compose(db, KEY, "   ", None, T0)
    assert empty.value.code == "empty_note"
    assert db.counts() == before


def test_reply_to_takes_only_the_persons_notes_of_this_node(db):
    mine = make_note(KEY, "the agent's own note", now_ms=T0, source="llm")
    theirs = make_note(OTHER, "a peer's note", now_ms=T0, source="user")
    unrecorded = make_note(KEY, "signed here as the person's, but no record of who asked", now_ms=T0, source="cli")
    for n in (mine, theirs, unrecorded):
        db.put_container(n, received_at_ms=T0)
    cli_note = write_note(db, KEY, person("cli"), "from the terminal", now_ms=T0, topic="lunch")
    count = db.counts()["notes"]
    for target in (mine.did, theirs.did, unrecorded.did, "did:hmp:container:uEinothere"):
        result = agent_reply(db, "hi", target, T0 + 1)
        assert result["status"] == "error" and result["code"] == "not_found"
        assert "context 6a" in result["error"]  # what the LLM sees says where the ids come from
    assert db.counts()["notes"] == count  # nothing stored for a refused reply
    ok = agent_reply(db, "noon is fine", cli_note.did, T0 + 2)
    assert ok["status"] == "ok" and ok["result"]["thread"] is None  # a plain note: its topic, no thread
    topic, source = db.conn.execute("SELECT topic, source FROM notes WHERE container_did = ?",
                                    (ok["result"]["did"],)).fetchone()
    assert (topic, source) == ("lunch", "llm") and read_of(db, cli_note.did) == 1


def test_context_6a_shows_the_persons_unread_messages_with_their_thread(db):
    long_text = "x" * 2500
    first = compose(db, KEY, "hello agent", None, T0)
    agent_reply(db, "hello person", first["did"], T0 + 1)
    compose(db, KEY, "tell me more", first["thread"], T0 + 2)
    new = compose(db, KEY, long_text, first["thread"], T0 + 3)
    peer = make_note(OTHER, "a peer writes", now_ms=T0 + 4, source="user")
    db.put_container(peer, received_at_ms=T0)
    text = prompt(db)
    assert text.index("## Messages from the person (context 6a)") < text.index("## Incoming notes (context 6)")
    part = json_lines(prompt_section(text, "Messages from the person (context 6a)", required=True))
    assert [m["text"][:12] for m in part] == ["x" * 12, "tell me more"]  # newest first, only this node's person
    assert part[0]["thread"] == first["thread"] and part[0]["id"] == new["did"]
    assert part[0]["text"].endswith(contexts.PERSON_CUT.format(id=new["did"]))
    assert len(part[0]["text"]) == contexts.PERSON_TEXT + len(contexts.PERSON_CUT.format(id=new["did"]))
    assert [(e["from"], e["text"]) for e in part[0]["earlier"]] == [("the person", "hello agent"),
                                                                   ("you", "hello person")]
    six = prompt_section(text, "Incoming notes (context 6)", required=True)
    assert new["did"] not in six and peer.did in six  # not listed twice; a peer's note stays in context 6
    assert "note_add reply_to=<id>" in contexts.SYSTEM_PROMPT
    # answered: gone from 6a; with nothing unread, no 6a at all
    for m in part:
        agent_reply(db, "ok", m["id"], T0 + 5, cmd_id=m["id"][-4:])
    assert "## Messages from the person" not in prompt(db)


def test_context_6a_keeps_to_its_budget(db):
    for i in range(10):
        compose(db, KEY, f"message {i} " + "y" * 1990, None, T0 + i)
    part = prompt_section(prompt(db), "Messages from the person (context 6a)", required=True)
    assert len(part) <= contexts.BUDGET["person"] and part.endswith(contexts.CUT)
    assert "message 9 " in part  # the newest survive the cut


async def test_send_wakes_the_cycle_unless_paused_or_turned_off_and_pokes_the_reactor(tmp_path):
    import trio

    from meshnode.store.service import Store

    class Cycle:
        def __init__(self, paused: bool):
            self.paused, self.wake = paused, trio.Event()

    class Reactor:
        pokes = 0

        def poke(self):
            self.pokes += 1

    store = await Store.open(tmp_path / "send.db")
    try:
        reactor = Reactor()
        for paused, wake, woken in ((False, True, True), (True, True, False), (False, False, False)):
            cycle = Cycle(paused)
            app = App(store, KEY, reactor=reactor, cycle=cycle, wake_on_message=wake, clock=lambda: T0)
            out = await chat_actions.chat_send(app, person("web"), "hello")
            assert out["woke"] is woken and cycle.wake.is_set() is woken
        assert reactor.pokes == 3
        out = await chat_actions.chat_send(App(store, KEY, clock=lambda: T0 + 1), person("cli"), "no cognition here",
                                           out["thread"])
        assert out["woke"] is False
        assert [m["text"] for m in (await store.read(chat.thread, KEY.did, out["thread"]))["messages"]] == [
            "hello", "no cognition here"]
    finally:
        await store.aclose()


async def test_ask_waits_for_the_agent_s_reply_and_gives_up_after_its_time(tmp_path):
    """``chat_send`` with a wait (MCP's and A2A's "ask the agent"): the reply the agent writes while the caller
    waits comes back; a question nobody answers returns no reply once its time is up."""
    import trio

    from meshnode.store.service import Store

    store = await Store.open(tmp_path / "ask.db")
    try:
        class Cycle:  # the agent: answers the message it is woken for, as note_add with reply_to does
            paused = False

            def __init__(self):
                self.wake = trio.Event()

        cycle = Cycle()
        asked = {}

        async def agent():
            await cycle.wake.wait()
            did = (await store.read(chat.unread_for_context, KEY.did))[0][0]
            await store.write(agent_reply, "4", did, T0 + 500)
            asked["did"] = did

        async with trio.open_nursery() as nursery:
            nursery.start_soon(agent)
            out = await chat_actions.chat_send(App(store, KEY, cycle=cycle, clock=lambda: T0), MCP, "what is 2+2?",
                                               None, 30)
        assert out["did"] == asked["did"] and [r["text"] for r in out["replies"]] == ["4"]

        with trio.fail_after(10):
            silent = await chat_actions.chat_send(App(store, KEY, clock=lambda: T0 + 1000), MCP, "anyone?",
                                                  out["thread"], 0.3)
        assert silent["replies"] == [] and silent["thread"] == out["thread"]
        for bad in (-1, "5", True, chat.MAX_WAIT_S + 1):
            with pytest.raises(chat.ChatError, match="wait_seconds"):
                await chat_actions.chat_send(App(store, KEY), MCP, "x", None, bad)
    finally:
        await store.aclose()


def test_the_cli_talks_pauses_and_lists_ticks_through_the_running_node(tmp_path):
    import subprocess
    import sys

    from meshharness import Node, wait_until

    node = Node(tmp_path, "talk", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.1", "MESHNODE_WEB_LISTEN": "127.0.0.1:0"})
    try:
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("ticks", 0) >= 1, 30, "a tick")
        assert "paused" in node.cli("mind", "pause")
        assert json.loads(node.cli("mind", "--json"))["paused"] is True
        first = node.cli("chat", "hello there")
        tid = first.split()[1].rstrip(":")
        assert first.startswith(f"thread {tid}: sent did:hmp:container:") and "resumes it" in first
        did = first.splitlines()[0].split()[3]
        node.cli("chat", "--thread", tid, "a second line")
        listing = node.cli("chat", "list")
        assert listing.startswith(tid) and "2 msg, 2 unread by the agent" in listing and "hello there" in listing
        shown = node.cli("chat", "show", tid)
        assert shown.count("you  (not seen by the agent yet):") == 2 and "a second line" in shown
        # the person answers a note: the reply lands in its thread and names it
        reply = node.cli("note", "add", "--reply-to", did, "to myself").strip()
        thread = node.call("chat_thread", {"thread": tid})["messages"]
        assert thread[-1]["did"] == reply and thread[-1]["in_reply_to"] == [did]
        assert "running" in node.cli("mind", "resume")
        # resumed, the agent ticks again (the commands above now take milliseconds, not the seconds of
        # a process each: wait for the ticks rather than count on the time they took)
        wait_until(lambda: len(node.call("mind_ticks", {"limit": 3})) >= 3, 30, "three traced ticks")
        ticks = node.cli("mind", "ticks", "--limit", "3")
        assert len(ticks.splitlines()) == 3 and "core_outage" in ticks
        number = ticks.split()[0]
        assert node.cli("mind", "ticks", number).startswith(f"{int(number):6}")
        bad = node.run_cli("chat", "--thread", "A" * 16, "x")
        assert bad.returncode == 1 and "no conversation" in bad.stderr
        # a reader that goes away: quietly, the shell's SIGPIPE code
        piped = subprocess.run(f"{sys.executable} -m meshnode --home {node.home} chat show {tid} | head -c 1",
                               shell=True, env=node.env, capture_output=True, text=True, timeout=60)
        assert piped.returncode == 0 and piped.stderr == ""
    finally:
        node.kill()


def test_paging_loses_no_thread_and_no_message_that_share_a_millisecond(db):
    """One tick's replies share its time: a page ending inside such a tie must not drop the rest of
    it (the next page starts strictly before the last time shown)."""
    a = compose(db, KEY, "thread a", None, T0)
    b = compose(db, KEY, "thread b", None, T0 + 1)
    c = compose(db, KEY, "thread c", None, T0 + 2)
    for n, first in enumerate((a, b)):  # one tick answers a and b: the same time
        assert agent_reply(db, f"answer {n}", first["did"], T0 + 100, cmd_id=f"r{n}")["status"] == "ok"
    seen, before = [], None
    for _ in range(5):
        page = chat.threads(db, KEY.did, limit=1, before=before)
        if not page:
            break
        seen += [r["thread"] for r in page]
        before = page[-1]["last_ms"]
    assert sorted(seen) == sorted([a["thread"], b["thread"], c["thread"]]) and len(seen) == 3
    tid = c["thread"]
    for n in range(3):  # three messages of one thread at one time, then one later
        compose(db, KEY, f"same time {n}", tid, T0 + 500)
    compose(db, KEY, "later", tid, T0 + 600)
    texts, before = [], None
    for _ in range(10):
        page = chat.thread(db, KEY.did, tid, limit=2, before=before)["messages"]
        if not page:
            break
        texts = [m["text"] for m in page] + texts
        before = page[0]["time_ms"]
    assert texts == ["thread c", "same time 0", "same time 1", "same time 2", "later"]


def test_the_person_renames_archives_and_deletes_threads_and_the_prompt_follows(db):
    from meshnode.store import chat_control

    a = compose(db, KEY, "keep talking about **ferries**", None, T0)
    b = compose(db, KEY, "an old question", None, T0 + 10)
    assert "keep talking" in prompt(db) and "an old question" in prompt(db)
    assert chat_control.rename(db, KEY.did, a["thread"], "  Ferries  ", T0 + 20)["title"] == "Ferries"
    assert chat.threads(db, KEY.did)[1]["title"] == "Ferries" and chat.thread(db, KEY.did, a["thread"])["renamed"]
    chat_control.rename(db, KEY.did, a["thread"], "", T0 + 21)  # back to its first words
    assert chat.thread(db, KEY.did, a["thread"])["title"].startswith("keep talking")
    # archived: out of the list's first page and out of the prompt; back again when brought back
    chat_control.archive(db, KEY.did, b["thread"], True, T0 + 30)
    assert [r["thread"] for r in chat.threads(db, KEY.did)] == [a["thread"]]
    assert [r["thread"] for r in chat.threads(db, KEY.did, archived=True)] == [b["thread"]]
    assert "an old question" not in prompt(db) and "keep talking" in prompt(db)
    chat_control.archive(db, KEY.did, b["thread"], False, T0 + 31)
    assert "an old question" in prompt(db)
    # deleted: gone from every list and the prompt, its notes hidden
    out = chat_control.delete(db, KEY.did, a["thread"], T0 + 40)
    assert out == {"thread": a["thread"], "deleted": True, "messages": 1}
    assert [r["thread"] for r in chat.threads(db, KEY.did)] == [b["thread"]]
    assert "keep talking" not in prompt(db)
    with pytest.raises(MeshnodeError) as gone:
        chat.thread(db, KEY.did, a["thread"])
    assert gone.value.code == "thread_not_found"
    for bad in (lambda: chat_control.rename(db, KEY.did, b["thread"], "x" * 201, T0),
                lambda: chat_control.archive(db, KEY.did, "C" * 16, True, T0)):
        with pytest.raises(MeshnodeError):
            bad()


def test_seen_answered_and_the_reminder_after_three_prompts(db):
    from meshnode.store import chat_control

    first = compose(db, KEY, "please summarize the ferry timetable " + "in detail " * 30, None, T0)
    tid = first["thread"]
    [m] = chat.thread(db, KEY.did, tid)["messages"]
    assert m["seen"] is None and m["answered"] == 0 and m["side"] == "person" and m["from"] == "person"
    messages, shown = contexts.build_shown(db, now_ms=T0 + 1, tick=1, recent_k=5, mode="normal", llm_id="x",
                                           own_did=KEY.did)
    assert shown == [(first["did"], tid)]
    for tick in (1, 2, 3):
        chat_control.record_prompted(db, [first["did"]], tick, T0 + tick)
    [m] = chat.thread(db, KEY.did, tid)["messages"]
    assert m["seen"] == {"prompts": 3, "first_tick": 1, "last_tick": 3} and m["answered"] == 0
    # shown in 3 answered prompts and not answered: a one-line reminder, not the whole text again
    [item] = json_lines(prompt_section(prompt(db), "(context 6a)", required=True))
    assert "shown in 3 prompts" in item["reminder"] and len(item["text"]) <= contexts.REMINDER_TEXT + 6
    assert "earlier" not in item
    assert agent_reply(db, "Here it is: **daily**", first["did"], T0 + 100)["status"] == "ok"
    t = chat.thread(db, KEY.did, tid)["messages"]
    assert t[0]["answered"] == 1
    assert t[1]["side"] == "agent" and t[1]["replying_to"] == [
        {"did": first["did"], "side": "person", "who": "the person (web)", "words": t[1]["replying_to"][0]["words"]}]
    assert t[1]["replying_to"][0]["words"].startswith("please summarize the ferry") and len(
        t[1]["replying_to"][0]["words"]) <= chat.WORDS


async def test_tick_now_refuses_a_paused_agent_and_threads_are_the_persons_to_control(tmp_path):
    import trio

    from meshnode.app.actions import mind as mind_actions
    from meshnode.app.actor import a2a
    from meshnode.store.service import Store

    store = await Store.open(tmp_path / "tick.db")
    try:
        class Cycle:
            paused, paused_by = True, "web"

            def __init__(self):
                self.wake = trio.Event()

            def status(self):
                return {"paused": self.paused}

        cycle = Cycle()
        app = App(store, KEY, cycle=cycle, clock=lambda: T0)
        with pytest.raises(MeshnodeError) as refused:
            await mind_actions.tick(app, person("web"))
        assert refused.value.code == "paused" and "resume" in refused.value.reason and not cycle.wake.is_set()
        cycle.paused = False
        await mind_actions.tick(app, person("web"))
        assert cycle.wake.is_set()
        out = await chat_actions.chat_send(App(store, KEY, clock=lambda: T0), person("web"), "hello")
        with pytest.raises(MeshnodeError) as not_allowed:
            await chat_actions.chat_thread_delete(app, a2a("known:bob", "bob"), out["thread"])
        assert not_allowed.value.code == "not_allowed"
        renamed = await chat_actions.chat_thread_rename(app, person("cli"), out["thread"], "Greetings")
        assert renamed == {"thread": out["thread"], "title": "Greetings"}
    finally:
        await store.aclose()
