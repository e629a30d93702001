"""The agent's side in real Chromium: a conversation answered live, ticks appearing live on /mind
and opening to their contexts, pause and resume from the page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browsing import login
from llmharness import command_block, prompt_section
from meshharness import wait_until
from webharness import agent_node

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("agent")) as web:
        yield web


def test_conversation(page, agent):
    login(page, agent)
    page.locator("#message").fill("what is 2+2?")
    page.locator("#message").press("Control+Enter")
    mine = page.locator("#messages .msg.person", has_text="what is 2+2?")
    expect(mine).to_be_visible()
    # not answered yet: waiting for a tick, with the LLM now (thinking), or seen in a prompt already
    expect(mine.locator(".state")).to_have_attribute("data-state", re.compile("^(waiting|thinking|seen)$"))
    did = mine.get_attribute("data-did")
    # the agent answers the prompt that shows the message: reply_to its id
    agent.llm.reply_when("what is 2+2?", "The person asks a sum. " + command_block(
        {"cmd_id": "r1", "type": "note_add", "args": {"text": "4", "reply_to": did}}))
    reply = page.locator("#messages .msg.agent")
    expect(reply).to_have_count(1)  # live: the page was not reloaded
    expect(reply).to_have_attribute("data-side", "agent")
    expect(reply.locator(".who")).to_have_text("Agent")
    expect(reply.locator(".body")).to_have_text("4")
    expect(mine.locator(".state")).to_have_attribute("data-state", "answered")
    expect(page.locator("#threads li")).to_have_count(1)
    shown = [p for p in agent.llm.prompts() if "what is 2+2?" in prompt_section(p, "(context 6a)")]
    assert shown, "the message's text (not only its id) reached the prompt in context 6a"


def test_markup_in_a_message_is_text(page, agent):
    login(page, agent)
    markup = '<img src=x onerror="document.body.dataset.pwned=1">hello'
    page.locator("#message").fill(markup)
    page.locator("#send").click()
    mine = page.locator("#messages .msg.person .body")
    expect(mine).to_have_text(markup)
    expect(page.locator("#threads li .title").first).to_have_text(markup)
    assert page.locator("#messages img, #threads img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None


def _top_tick(page) -> int:
    return int(page.locator("#tick-list details.tick").first.get_attribute("data-tick"))


def test_tick_live(page, agent):
    login(page, agent)
    page.goto(agent.url + "/mind")
    expect(page.locator("#tick-list details.tick").first).to_be_visible()
    first = _top_tick(page)
    newer = page.locator(f"#tick-list details.tick[data-tick='{first + 1}']")
    expect(newer).to_be_visible()  # arrived by the feed, no reload
    newer.locator("summary").dispatch_event("click")  # not by coordinates: new ticks push the row down
    body = newer.locator(".tick-body")
    expect(body.locator("details.context > summary", has_text="(context 2)")).to_be_visible()
    expect(body.locator("pre.answer")).to_contain_text("# Commands:")
    with page.expect_response("**/api/gate/reset-limit") as reset:  # the person gives a fresh tool-call budget
        page.locator("#state button.reset-limit").click()
    assert reset.value.ok and reset.value.json()["ok"] is True
    ctx = body.locator("details.context", has_text="Goals and tasks")
    ctx.locator("summary").dispatch_event("click")
    expect(ctx.locator("pre")).to_contain_text("goals")


def test_pause_resume(page, agent):
    login(page, agent)
    page.goto(agent.url + "/mind")
    try:
        page.locator("#state button.pause").click()
        expect(page.locator("#nav .paused")).to_be_visible()  # the header, by the feed's mode event
        expect(page.locator("#state")).to_have_attribute("data-paused", "yes")
        ticks = agent.get("/api/mind")["ticks"]
        page.wait_for_timeout(2000)  # the window in which a running agent would tick several times
        assert agent.get("/api/mind")["ticks"] <= ticks + 1  # a tick in progress may finish
        page.locator("#state button.resume").click()
        expect(page.locator("#nav .paused")).to_be_hidden()
        top = _top_tick(page)
        expect(page.locator(f"#tick-list details.tick[data-tick='{top + 1}']")).to_be_visible()
    finally:
        agent.post("/api/mind/resume")  # the module's next tests need a thinking agent


def test_wake_on_message(page, agent):
    """Idle for up to 300 s, the agent wakes at once for the person's message."""
    agent.llm.reply_when("(context 2)", "I rest until someone writes. " + command_block(
        {"cmd_id": "i1", "type": "cycle_settings", "args": {"idle": {"on": True, "timeout_seconds": 300}}}))
    wait_until(lambda: agent.get("/api/mind")["idle"], 30, "the agent idle")
    login(page, agent)
    expect(page.locator("#nav .idle")).to_be_visible()
    seen = len(agent.llm.prompts())
    page.locator("#message").fill("wake up, please")
    page.locator("#send").click()
    # woken at once: "woken by your message" lasts until the tick starts (often too short to see), then
    # thinking, seen or answered; never "idle: the agent will see your message when it wakes"
    expect(page.locator("#agent-status")).to_have_attribute("data-state", re.compile("^(waiting|thinking|seen|answered)$"))
    expect(page.locator("#agent-status")).not_to_contain_text("idle:")
    # idle's own timeout is 300 s: only the wake explains a prompt within this wait (~1 s here)
    wait_until(lambda: [p for p in agent.llm.prompts()[seen:] if "wake up, please" in p], 60,
               "a prompt with the message")
    expect(page.locator("#nav .idle")).to_be_hidden()
