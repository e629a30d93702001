"""One event stream per browser, and a page that says when its node is gone (protocols/web.md 5.3).

20 tabs of one browser all load and all get a note written in another process, over the one stream
the server counts; a node stopped under an open page shows "disconnected", and after a restart on
the same port the page reconnects by itself and is live again; a stream refused at max_streams is
shown and retried; without SharedWorker one tab leads (Web Locks) and relays to the others.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browsing import csp_errors, login, shot
from meshharness import wait_until
from webharness import web_node

pytestmark = pytest.mark.browser

PAGES = ["/", "/mind", "/goals", "/review", "/mesh", "/knowledge", "/reactor"]
RECONNECT_MS = 40_000  # the backoff reaches 30 s (plus the time a node takes to start)

# a tab's own subscription, through the page's api.js (the same module instance as the page's)
WATCH = """async () => {
  const api = await import("/static/api.js");
  window.notesSeen = [];
  api.stream(["note"], (type, data) => window.notesSeen.push(data.text || ""));
}"""


SEEN = "(text) => window.notesSeen.includes(text)"


def open_streams(web) -> int:
    """The server's gauge of open event streams."""
    text = web.client().get("/metrics").text
    return int(float(re.search(r"^meshnode_web_sse_streams (\S+)$", text, re.M).group(1)))


def note(web, text: str) -> None:
    web.node.cli("note", "add", text)  # another process: the feed sees it in the database


def all_get_a_note(web, tabs, text: str) -> None:
    """Every tab live, the browser holding one stream, and a note from the CLI reaching every tab."""
    for tab in tabs:
        expect(tab.locator("#nav .link-state")).to_have_attribute("data-state", "open")
        tab.evaluate(WATCH)
    assert wait_until(lambda: open_streams(web) == 1, 15, "one open stream for the browser")
    note(web, text)
    for tab in tabs:
        tab.wait_for_function(SEEN, arg=text)


@pytest.fixture(scope="module")
def tabs_node(tmp_path_factory):
    """One node for the tests that only open tabs and write notes (the others stop it or cap its streams)."""
    with web_node(tmp_path_factory.mktemp("tabs"), name="tabs") as web:
        yield web


def test_twenty_tabs_share_one_stream_and_all_update(page, tabs_node):
    web = tabs_node
    login(page, web)
    tabs = [page]
    for n in range(1, 20):
        tab = page.context.new_page()
        tab.goto(web.url + PAGES[n % len(PAGES)])
        tabs.append(tab)
    for tab in tabs:
        expect(tab.locator("#nav .node-name")).to_have_text("tabs")  # loaded: its API calls were answered
    all_get_a_note(web, tabs, "Twenty tabs, one stream.")
    knowledge = tabs[5]
    expect(knowledge.locator("#note-list")).to_contain_text("Twenty tabs, one stream.")
    assert open_streams(web) == 1
    assert not csp_errors(page), page.console_errors  # the worker's script and its fetch are 'self'
    shot(knowledge, "stream-twenty-tabs")


def test_a_stopped_node_is_shown_and_the_page_reconnects(page, tmp_path):
    with web_node(tmp_path, name="restart") as web:
        login(page, web)
        page.goto(web.url + "/knowledge")
        state = page.locator("#nav .link-state")
        expect(state).to_have_attribute("data-state", "open")
        expect(page.locator("#nav .peers")).to_have_text("0 peers connected")
        port = web.url.rsplit(":", 1)[1]

        web.stop()
        expect(state).to_have_attribute("data-state", "down")
        expect(state).to_contain_text("disconnected")
        expect(state).to_contain_text(re.compile(r"retrying (in \d+ s|now)"))
        expect(state.locator("[role=status]")).to_have_attribute("aria-live", "polite")
        expect(page.locator("#nav .peers")).to_have_text("peers unknown")  # not "0 peers connected"
        expect(page.locator("#nav .mode")).to_have_class(re.compile(r"\bstale\b"))
        shot(page, "stream-disconnected")

        web.node.env["MESHNODE_WEB_LISTEN"] = f"127.0.0.1:{port}"  # the same home on the same port
        web.start()
        assert web.url.endswith(f":{port}")
        expect(state).to_have_attribute("data-state", "open", timeout=RECONNECT_MS)
        expect(page.locator("#nav .peers")).to_have_text("0 peers connected")
        note(web, "Back after the restart.")
        expect(page.locator("#note-list")).to_contain_text("Back after the restart.")


def test_a_refused_stream_is_shown_and_retried(page, tmp_path):
    with web_node(tmp_path, name="full", env={"MESHNODE_WEB_MAX_STREAMS": "1",
                                              "MESHNODE_WEB_REFUSED_RETRY_SECONDS": "1"}) as web:
        login(page, web)  # the page takes the one slot
        state = page.locator("#nav .link-state")
        expect(state).to_have_attribute("data-state", "open")
        page.goto("about:blank")  # its stream ends with the last tab
        assert wait_until(lambda: open_streams(web) == 0, 15, "the page's stream closed")
        with web.client() as other, other.stream("GET", "/api/events", params={"types": "note"}) as held:
            assert held.status_code == 200
            page.goto(web.url + "/knowledge")
            expect(state).to_have_attribute("data-state", "refused")
            expect(state).to_contain_text("refused")
            expect(state).to_contain_text(re.compile(r"retrying in \d+ s"))
            expect(page.locator("#nav .peers")).to_have_text("0 peers connected")  # the node answers
            shot(page, "stream-refused")
        # the slot is free again: the page's next try (after Retry-After: 1 s, set above; 10 s by default) gets it
        expect(state).to_have_attribute("data-state", "open", timeout=RECONNECT_MS)
        note(web, "Live after the refusal.")
        expect(page.locator("#note-list")).to_contain_text("Live after the refusal.")


def test_without_shared_worker_one_tab_leads_and_relays(browser, tabs_node):
    """Chrome on Android has no SharedWorker: the tabs elect a leader with Web Locks."""
    context = browser.new_context()
    context.add_init_script("delete window.SharedWorker;")
    web = tabs_node
    try:
        first = context.new_page()
        login(first, web)
        tabs = [first] + [context.new_page() for _ in range(3)]
        for tab in tabs[1:]:
            tab.goto(web.url + "/knowledge")
        all_get_a_note(web, tabs, "Relayed by the leader.")

        first.close()  # the leader goes: the next tab in the lock's queue takes over
        for tab in tabs[1:]:
            expect(tab.locator("#nav .link-state")).to_have_attribute("data-state", "open")
        note(web, "Relayed by the next leader.")
        for tab in tabs[1:]:
            expect(tab.locator("#note-list")).to_contain_text("Relayed by the next leader.")
        assert wait_until(lambda: open_streams(web) == 1, 15, "still one open stream")
    finally:
        context.close()

