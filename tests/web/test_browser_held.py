"""A held command released from /mind: with its only validator unreachable, the agent's commands
wait for a person; Release runs it, the row turns done and shows the command's result."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import login
from llmharness import ScriptedLLM, command_block, distinct_answers
from meshharness import wait_until
from webharness import WebNode

pytestmark = pytest.mark.browser


def test_held_release(page, tmp_path):
    llm = ScriptedLLM(tmp_path, "main", distinct_answers(500, lambda i, text: []))
    down = ScriptedLLM(tmp_path, "down", [503])  # the only validator never answers: no verdict, commands held
    web = WebNode(tmp_path, llm=llm)
    try:
        web.node.cli("llm", "add", "down", "--url", down.url, "--model", "m", "--validator")
        llm.reply_when("the ferry leaves at noon", "The person told me when the ferry leaves. " + command_block(
            {"cmd_id": "f1", "type": "diary_add", "args": {"text": "ferry at noon"}}))
        web.post("/api/notes", {"text": "remember: the ferry leaves at noon"})
        held = wait_until(lambda: [r for r in web.get("/api/mind/held") if r["cmd_id"] == "f1"], 30,
                          "the diary_add held for want of a verdict")
        login(page, web)
        page.goto(web.url + "/mind")
        row = page.locator(f'#held tr[data-id="{held[0]["id"]}"]').first
        expect(row).to_contain_text("diary add")  # the command in words (issue 34)
        expect(row).to_contain_text("held")
        row.locator("button.release").click()
        done = page.locator(f'#held tr[data-id="{held[0]["id"]}"]', has_text="done")
        expect(done).to_be_visible()
        expect(done).to_contain_text("web")   # decided by the person on the web
        expect(done).to_contain_text("did")    # the command's result: the diary entry's DID
        assert [d for d in web.get("/api/diary") if "ferry at noon" in (d.get("text") or "")]
    finally:
        web.stop()
        llm.stop()
        down.stop()
