"""Pages made for reading (issue 34), in Chromium set to a zone far from UTC: names where a DID or a
hash was, times in the reader's zone, no raw JSON in a table cell, /reactor as a timeline in
sentences, /knowledge saying who wrote each item and the diary as dated paragraphs, goals with
their descriptions, and only the one of Pause and Resume that applies on /mind. Screenshots of
/reactor and /knowledge are saved."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browsing import TIMEOUT_MS, csp_errors, login, shot
from meshharness import wait_until
from webharness import agent_node

pytestmark = pytest.mark.browser

ZONE = "Pacific/Auckland"  # +12/+13 h: a UTC time shown as is would be another day's hour
DID = re.compile(r"did:(key|hmp):")
TD_JSON = """() => [...document.querySelectorAll("td")].map((td) => td.innerText.trim())
  .filter((s) => /^[\\[{]/.test(s) || /"\\w+":/.test(s))"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    # the reactor scans every 0.5 s (60 by default): the note's wake is there at once, not a scan later
    with agent_node(tmp_path_factory.mktemp("reading"), env={"MESHNODE_REACTOR_SCAN_SECONDS": "0.5"}) as web:
        me = web.get("/api/status")["did"]
        goal = web.post("/api/goals", {"title": "Grow tomatoes", "description": "Six **plants** on the balcony"})
        task = web.post("/api/tasks", {"goal": goal["lineage"], "title": "Water them",
                                       "description": "each *morning*"})
        web.post(f"/api/tasks/{task['lineage']}/assign", {"candidates": [me]})
        web.post("/api/notes", {"text": "The seeds came **on Saturday**.", "topic": "garden"})
        web.post("/api/diary", {"text": "Today I *planted* the first two.\n\nThe soil was dry."})
        wait_until(lambda: [w for w in web.get("/api/reactor/timeline") if w["kind"] == "wake"], 60,
                   "a reactor wake for the note")
        yield web


@pytest.fixture
def zpage(browser, node):
    """A page in a browser context set to ZONE, logged in."""
    expect.set_options(timeout=TIMEOUT_MS)
    context = browser.new_context(timezone_id=ZONE)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    login(pg, node)
    yield pg
    context.close()


def visible_text(page) -> str:
    """What the person reads (innerText: a closed <details> fold and titles are not in it)."""
    return page.evaluate("() => document.querySelector('main').innerText")


def assert_readable(page) -> None:
    """No DID in what the person reads, no raw JSON in a table cell, no refusal by the CSP."""
    text = visible_text(page)
    assert not DID.search(text), text[:2000]
    assert page.evaluate(TD_JSON) == []
    assert not csp_errors(page), page.console_errors


def test_the_reactor_reads_as_a_timeline_of_sentences(zpage, node):
    zpage.goto(node.url + "/reactor")
    wake = zpage.locator("#timeline-list li.wake[data-kind=wake]").first
    expect(wake.locator(".sentence")).to_have_text(re.compile(r"^The reactor woke the agent for .+\.$"))
    expect(wake.locator(".signals li").first).to_contain_text("the person (web)")
    expect(wake.locator(".did")).to_contain_text(re.compile(r"What it did: .+"))
    assert "null" not in wake.inner_text() and "undefined" not in wake.inner_text()
    expect(zpage.locator("#events td").first).to_be_visible()
    assert_readable(zpage)
    # a time in the reader's zone: what the browser itself says for that instant
    first = node.get("/api/reactor/timeline")[0]
    local = zpage.evaluate("(ms) => new Date(ms).toLocaleString()", first["at_ms"])
    expect(zpage.locator("#timeline-list li").first.locator("time")).to_have_text(local)
    shot(zpage, "reading-reactor")
    wake.locator("button.open-job").click()  # the wake in detail: its ids folded away
    expect(zpage.locator("#job")).to_contain_text("A wake of the agent.")
    assert_readable(zpage)


def test_knowledge_says_who_wrote_what_and_the_diary_reads_as_a_diary(zpage, node):
    zpage.goto(node.url + "/knowledge")
    note = zpage.locator("#note-list article.note", has_text="The seeds came")
    expect(note.locator(".author")).to_have_text("the person (web)")
    expect(note.locator(".note-text strong")).to_have_text("on Saturday")  # Markdown, rendered
    row = next(n for n in node.get("/api/notes") if "The seeds came" in n["text"])
    local = zpage.evaluate("(ms) => new Date(ms).toLocaleString()", row["at_ms"])
    expect(note.locator("time")).to_have_text(local)
    assert "Z" not in note.locator("time").inner_text()  # not the stored UTC text
    note.locator("button", has_text="Open").click()
    expect(zpage.locator("#note .meta")).to_contain_text("written by the person (web)")
    expect(zpage.locator("#note .note-text strong")).to_have_text("on Saturday")
    entry = zpage.locator("#diary article.diary-entry").first
    at = next(d for d in node.get("/api/diary"))["at_ms"]
    day = zpage.evaluate("(ms) => new Date(ms).toLocaleDateString(undefined, {weekday: 'long', year: 'numeric',"
                         " month: 'long', day: 'numeric'})", at)
    expect(entry.locator("h3 time")).to_contain_text(day)  # the day in the reader's zone, in words
    expect(entry.locator(".entry p")).to_have_count(2)  # paragraphs, not a table row
    expect(entry.locator(".entry em")).to_have_text("planted")
    expect(entry.locator(".author")).to_have_text("the person (web)")
    expect(zpage.locator("#diary table")).to_have_count(0)
    assert_readable(zpage)
    shot(zpage, "reading-knowledge")


def test_goals_show_their_descriptions_and_names(zpage, node):
    zpage.goto(node.url + "/goals")
    goal = zpage.locator("#goals .goal", has_text="Grow tomatoes")
    expect(goal.locator(".head + .description strong")).to_have_text("plants")
    expect(goal.locator(".task .description em")).to_have_text("morning")
    expect(goal.locator(".task")).to_contain_text("held by the agent")
    expect(goal.locator(".head .author")).to_have_text("the person (web)")
    assert_readable(zpage)
    shot(zpage, "reading-goals")


def test_mind_shows_only_the_button_that_applies_and_ticks_in_words(zpage, node):
    zpage.goto(node.url + "/mind")
    expect(zpage.locator("#tick-list details.tick").first).to_be_visible()
    pause, resume, tick = (zpage.locator(f"#state button.{c}") for c in ("pause", "resume", "tick-now"))
    expect(pause).to_be_visible()
    expect(resume).to_be_hidden()
    assert "(ran ?)" not in visible_text(zpage)
    pause.click()
    expect(resume).to_be_visible()
    expect(pause).to_be_hidden()
    expect(tick).to_be_hidden()  # a tick cannot run while paused
    resume.click()
    expect(pause).to_be_visible()
    expect(resume).to_be_hidden()
    assert_readable(zpage)


def test_tables_keep_their_words_whole(zpage, node):
    zpage.goto(node.url + "/review")
    expect(zpage.locator("#confirmations .body > *").first).to_be_visible()
    style = zpage.evaluate("""() => { const t = document.createElement('table'); t.className = 'rows';
      t.innerHTML = '<tbody><tr><td>send_message</td></tr></tbody>'; document.querySelector('main').append(t);
      const s = getComputedStyle(t.querySelector('td')); return [s.wordBreak, s.overflowWrap]; }""")
    assert style == ["normal", "normal"], style
