"""What the agent is told, in a real node thinking with scripted LLMs over real HTTP: every command
with its arguments (and the tools with their schemas), the commands it sent past the limit, a
file of a megabyte written through the gate, its own notes kept out of its mail, and its true
mode (issue 12, items 8, 9, 10, 12, 14)."""

from __future__ import annotations

import json
import sqlite3
import time

import meshnode.node.run  # noqa: F401  (everything the node registers)
from llmharness import command_block, json_lines
from meshnode.engines.cognition import contexts
from meshharness import Node, wait_until
from meshnode.engines.cognition.command_types import command_names, command_type

FAST_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"}


def prompt(request: dict) -> str:
    return request["messages"][1]["content"]


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n\n## ", 1)[0]


def test_the_llm_is_told_every_command_with_its_arguments_and_gets_details_on_request(tmp_path, llms):
    llm = llms("main", ["Which arguments does task_add take? " + command_block(
        {"cmd_id": "h1", "type": "help", "args": {"command": "task_add"}}), "Now I know how to add a task."])
    node = Node(tmp_path, "mind", env={**FAST_MIND, "MESHNODE_GATE_OFFER_TOOLS": "true"})
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        wait_until(lambda: len(llm.seen()) >= 2, 60, "two ticks asking the LLM")
        first, second = llm.seen()[:2]
        catalogue = section(prompt(first), "Commands (context 2)")
        assert "cut to fit" not in catalogue
        for name in command_names():  # every registered command, each argument named
            line = next((x for x in catalogue.splitlines() if x.startswith(f"{name}(")), None)
            assert line is not None, f"{name} is not shown to the LLM"
            assert all(f"{arg}{'' if req else '?'}:" in line for arg, (_, req) in command_type(name).schema.fields.items())
        assert ("task_add(title:str, goal?:str, description?:str, parent?:str, depends?:[str], deadline_ms?:int,"
                " check_every_s?:int, grace_s?:int, rule?:creator|cogconsensus|meshconsensus, priority?:0..1,"
                " tags?:[str])") in catalogue
        # the tool definitions carry the same argument schemas
        tools = {t["function"]["name"]: t["function"]["parameters"] for t in first["tools"]}
        assert sorted(tools) == command_names()
        assert tools["task_add"]["required"] == ["title"] and "goal" in tools["task_add"]["properties"]
        assert tools["write_file"]["properties"]["content"]["maxLength"] == 1 << 20
        # help TYPE answered in the next tick's results: each argument in words, and an example
        results = section(prompt(second), "Results of your last commands and processes (context 4)")
        assert "cmd:h1 [ok]" in results and "optional: a number from 0 to 1" in results
        assert '"example"' in results
    finally:
        node.kill()


def test_commands_past_the_limit_are_reported_as_errors_in_the_next_tick(tmp_path, llms):
    many = [{"cmd_id": f"m{i}", "type": "llm_memory_add", "args": {"text": f"memory {i}"}} for i in range(1, 71)]
    llm = llms("main", ["So much to remember. " + command_block(*many), "What was dropped?"])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        wait_until(lambda: len(llm.seen()) >= 2, 60, "the tick after the long answer")
        results = section(prompt(llm.seen()[1]), "Results of your last commands and processes (context 4)")
        assert "too_many_commands" in results and "these 6 were not run" in results
        assert all(f"m{i} (llm_memory_add)" in results for i in range(65, 71))
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            assert conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] == 64
        finally:
            conn.close()
    finally:
        node.kill()


def test_a_file_of_a_megabyte_is_written_as_the_tool_advertises(tmp_path, llms):
    content = ("0123456789abcdef" * 4 + "\n") * ((1 << 20) // 65)
    content += "x" * ((1 << 20) - len(content))  # exactly write_file's maxLength: 1 MiB
    llm = llms("main", ["Writing the data file. " + command_block(
        {"cmd_id": "w1", "type": "write_file", "args": {"path": "big.txt", "content": content}}), "Done."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM process_log WHERE name = 'cmd:w1'").fetchone()[0],
                       60, "the write_file command to run")
            status, value = conn.execute("SELECT status, value FROM process_log WHERE name = 'cmd:w1'").fetchone()
            assert status == "ok", value
            drafted = conn.execute("SELECT content FROM gate_drafts WHERE path = 'big.txt'").fetchone()[0]
            assert len(drafted) == 1 << 20 and drafted.decode() == content
        finally:
            conn.close()
    finally:
        node.kill()


def _eventually(predicate, seconds: float) -> bool:
    """Whether ``predicate`` becomes true within ``seconds`` (to show that something does NOT happen:
    the idle loop looks for new notes every second, so a wake would come within this window)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_the_agents_own_notes_are_not_its_mail_and_do_not_wake_it(tmp_path, llms):
    first = "Let me note this, ask a helper, and wait for mail. " + command_block(
        {"cmd_id": "n1", "type": "note_add", "args": {"text": "my own thought"}},
        {"cmd_id": "t1", "type": "llm_task", "args": {"task_description": "look into quorums"}},
        {"cmd_id": "d1", "type": "delete_file", "args": {"path": "old.txt"}},  # asks the person: a notice
        {"cmd_id": "i1", "type": "cycle_settings", "args": {"idle": {"on": True, "timeout_seconds": 600,
                                                                     "on_note": True}}})
    helper = "Quorums overlap. " + command_block({"cmd_id": "a1", "type": "note_add", "args": {"text": "aux finding"}})
    third = "The person wrote; reading my mail. " + command_block(
        {"cmd_id": "l1", "type": "note_list", "args": {}})
    llm = llms("main", [first, helper, third, "Read it."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        (node.home / "workspace").mkdir(exist_ok=True)
        (node.home / "workspace" / "old.txt").write_text("old\n")
        node.start()
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            wait_until(lambda: conn.execute("SELECT count(*) FROM notes WHERE source IN ('llm', 'llm:task', 'system')")
                       .fetchone()[0] >= 3, 60, "the agent's note, its helper's note and the confirmation notice")
            wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("idle"), 30, "idle")
            assert conn.execute("SELECT count(*) FROM notes WHERE read = 0").fetchone()[0] == 0
            assert not _eventually(lambda: len(llm.seen()) > 2, 3), "its own notes woke it"
            helper_asked = prompt(next(r for r in llm.seen() if r["messages"][0]["content"].startswith("You work on")))
            assert "note_add(text:str" in helper_asked and "diary_add(" not in helper_asked  # what it may run
            mine = dict(conn.execute("SELECT source, container_did FROM notes"))
            person = node.cli("note", "add", "are you there?").strip()  # mail: this wakes it
            wait_until(lambda: len(llm.seen()) >= 3, 30, "a tick after the person's note")
            mail = json.loads(section(prompt(llm.seen()[2]), contexts.NOTES_SECTION))
            assert mail["unread"] == [] and mail["unread_by_priority"] == {"0": 1}  # shown in 6a, not twice
            [message] = json_lines(section(prompt(llm.seen()[2]), "Messages from the person (context 6a)"))
            assert message["id"] == person and message["text"] == "are you there?"
            inbox = section(prompt(llm.seen()[2]), contexts.NOTES_SECTION)
            assert len(mine) == 3 and not any(did in inbox for did in mine.values())
            wait_until(lambda: len(llm.seen()) >= 4, 30, "the tick after note_list")
            listed = section(prompt(llm.seen()[3]), "Results of your last commands and processes (context 4)")
            assert '"from": "you"' in listed and '"from": "your auxiliary loop"' in listed
            assert '"from": "the person"' in listed and '"from": "this node"' in listed
        finally:
            conn.close()
    finally:
        node.kill()


def test_the_first_tick_shows_the_true_mode_and_an_outage_names_each_failing_llm(tmp_path, llms):
    llm = llms("main", ["Thinking from the first tick. ", "Still thinking."])
    node = Node(tmp_path, "mind", env=FAST_MIND)
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        wait_until(lambda: llm.seen(), 60, "the first tick")
        system = json.loads(section(prompt(llm.seen()[0]), "System (context 7)"))
        assert system["mode"] == "isolated"  # a lone node whose LLM answers; not core_outage
    finally:
        node.kill()
    broken = llms("broken", [500])
    node = Node(tmp_path, "outage", env=FAST_MIND)
    try:
        node.cli("llm", "add", "broken", "--url", broken.url, "--model", "gone")
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("mode") == "core_outage", 60,
                   "core outage")
        mind = node.call("status")["cognition"]
        assert "add one with" not in mind["hint"] and "last error" in mind["hint"]
        assert mind["llms"] == [{"id": "broken", "model": "gone", "url": broken.url,
                                 "error": "broken answered HTTP 500"}]
        text = node.cli("status")
        assert "core_outage" in text and "llm broken (gone at " in text and "answered HTTP 500" in text
    finally:
        node.kill()
