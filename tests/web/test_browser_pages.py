"""The pages in real Chromium: login by the link, every page drawn under the CSP (screenshots),
and text from notes shown as text, never as markup."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import csp_errors, login, login_link, shot
from webharness import agent_node

pytestmark = pytest.mark.browser

# what each page shows once its first list has loaded (an empty list says so: p.empty)
PAGES = {
    "conversation": ("/", "#threads > li"),
    "mind": ("/mind", "#tick-list details.tick"),
    "goals": ("/goals", "#goals .body > *"),
    "review": ("/review", "#drafts .body > *"),
    "mesh": ("/mesh", "#peers .body > *"),
    "knowledge": ("/knowledge", "#note-list > *"),
    "reactor": ("/reactor", "#reactor-status .body dl"),
}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("pages")) as web:
        yield web


def test_login_link(page, node):
    page.goto(node.url.rstrip("/") + "/mind")
    expect(page).to_have_url(node.url.rstrip("/") + "/login")  # no session: the login page, no token in it
    page.goto("about:blank")  # from /login, the link would be a same-document (fragment) navigation
    page.goto(login_link(node))
    page.wait_for_url(node.url.rstrip("/") + "/")
    assert "#t=" not in page.url and "t=" not in page.url
    cookie = next(c for c in page.context.cookies() if c["name"] == "meshnode_session")
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    expect(page.locator("#nav .node-name")).to_have_text(node.node.name)
    assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts cannot read it
    assert not csp_errors(page), page.console_errors


def test_screenshots(page, node):
    # something on the pages: a conversation, a goal with a task for the agent, a note
    node.post("/api/threads", {"text": "Could you keep an eye on the balcony tomatoes?"})
    goal = node.post("/api/goals", {"title": "Grow tomatoes on the balcony", "description": "six plants"})
    task = node.post("/api/tasks", {"goal": goal["lineage"], "title": "Water them each morning"})
    node.post(f"/api/tasks/{task['lineage']}/assign", {"candidates": [node.get("/api/status")["did"]]})
    node.post("/api/notes", {"text": "The seeds came from the market on Saturday.", "topic": "garden"})
    page.goto(node.url.rstrip("/") + "/login")
    expect(page.locator("body")).to_contain_text("meshnode web url")
    shot(page, "login")
    page.goto("about:blank")
    login(page, node)
    for name, (path, ready) in PAGES.items():
        page.goto(node.url.rstrip("/") + path)
        expect(page.locator(ready).first).to_be_visible()
        expect(page.locator(f'#nav a[href="{path}"]')).to_have_class("active")
        expect(page.locator("#nav .mode")).not_to_have_text("?")
        shot(page, name)
        if name == "mind":
            number = page.locator("#tick-list details.tick").first.get_attribute("data-tick")
            tick = page.locator(f"#tick-list details.tick[data-tick='{number}']")  # newer ticks come on top meanwhile
            tick.locator("summary").dispatch_event("click")  # not by coordinates: new ticks push the row down
            expect(tick.locator(".tick-body details.context").first).to_be_visible()
            expect(tick.locator(".tick-body pre.answer")).to_contain_text("# Commands:")
            shot(page, "mind-tick-open")
    page.goto(node.url.rstrip("/") + "/")
    page.emulate_media(color_scheme="dark")  # base.css follows the system's choice
    expect(page.locator("body")).to_have_css("background-color", "rgb(23, 24, 26)")
    expect(page.locator("#threads > li").first).to_be_visible()
    expect(page.locator("#nav .mode")).not_to_have_text("?")
    shot(page, "conversation-dark")
    assert not csp_errors(page), csp_errors(page)
    assert not [e for e in page.console_errors if "Failed to load" not in e], page.console_errors


def test_markup_in_a_note_is_text(page, node):
    markup = '<img src=x onerror="document.body.dataset.pwned=1"><b>bold?</b>'
    login(page, node)
    page.goto(node.url.rstrip("/") + "/knowledge")
    expect(page.locator("#note-list > *").first).to_be_visible()
    node.post("/api/notes", {"text": markup, "topic": "xss"})  # arrives on the open page by a note event
    shown = page.locator("#note-list .note-text", has_text="onerror")
    expect(shown.first).to_have_text(markup)
    # who wrote it: the person, through the web (store.provenance), not the node's name
    expect(page.locator("#note-list .note", has_text="onerror").first.locator(".meta")).to_contain_text(
        "the person (web)")
    assert page.locator("#note-list img, #note-list b").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
