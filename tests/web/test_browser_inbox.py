"""The inbox as the person meets it: one item of each kind on /inbox (a held A2A message from a real
stranger, the agent's confirmation asked in a conversation, a held command, a draft, an escalation),
the count in the top bar of every page, decisions in place that update the count live in another tab,
the bulk "reject all held A2A", and the conversation's own item shown and decided in that thread."""

from __future__ import annotations

import time
from types import SimpleNamespace

import httpx
import pytest
from playwright.sync_api import expect

from browsing import a2a_stranger_body, login, shot
from meshnode.engines.gate.jail import Jail
from meshnode.faces.web.pages import PAGES
from meshnode.records.gate import confirm, drafts
from meshnode.records.mind import held
from webharness import WebNode

pytestmark = pytest.mark.browser
QUIET = {"MESHNODE_REACTOR_ENABLED": "false"}  # no escalation of its own (the agent is off): the counts are ours



def _now() -> int:
    return time.time_ns() // 1_000_000


def _stranger(web, text: str) -> None:
    body = a2a_stranger_body(text, "did:key:zSpam")
    with httpx.Client(timeout=30) as http:
        assert "result" in http.post(web.url + "/a2a", json=body).json()


def _ask_in(web, did: str, text: str) -> int:
    """The agent's confirmation request for a public answer to note ``did`` (its thread's)."""
    return web.on_db(lambda db: confirm.request(db, "core", "note_add", {"text": text, "reply_to": did,
                                                                             "audience": "public"},
                                                  "outbound", "a public note", _now()))["id"]


def _fill(web) -> dict:
    _stranger(web, "buy my course")
    sent = web.post("/api/threads", {"text": "what is on my calendar?"})
    asked = _ask_in(web, sent["did"], "Your calendar is empty")
    command = SimpleNamespace(cmd_id="c1", type="note_add", args={"text": "a held thought"}, description="",
                              target_llm=None, mutating=True)

    def hold_and_draft(db):
        with db.transaction() as conn:
            held.hold(conn, 4, [command], "rejected", "validators said no", _now())
        drafts.draft_write(db, Jail([(web.home / "workspace").resolve()]), "core", "plan.txt", b"step one\n")
    web.on_db(hold_and_draft)
    note = web.node.call("note_add", {"text": "the reactor woke the agent and it wrote nothing", "topic":
                                      "reactor-escalation"})
    web.on_db(lambda db: db.conn.execute(
        "INSERT INTO reactor_escalations (key, agent, to_id, level, event_key, subject, text, sent_ms, container_id)"
        " VALUES ('esc:operator:core:e1', 'core', 'operator', 2, 'e1', 'a wake left no trace', 'no trace', ?, ?)",
        (_now(), note["did"])))
    return {"thread": sent["thread"], "first": sent["did"], "asked": asked}


def _count(page):
    return page.locator("#nav .inbox-count")


def test_the_inbox_lists_counts_and_decides_in_place(page, tmp_path):
    web = WebNode(tmp_path, env=QUIET)
    try:
        (web.home / "workspace").mkdir(exist_ok=True)
        made = _fill(web)
        login(page, web)
        expect(_count(page)).to_have_text("5")
        for path in PAGES:  # the count in the top bar of every page, as a link to the inbox
            page.goto(web.url + path)
            expect(_count(page)).to_have_text("5")
            expect(page.locator('#nav a[href="/inbox"]')).to_have_attribute("aria-label", "Inbox: 5 items wait for you")
        items = page.locator("#inbox-items article.inbox-item")
        expect(items).to_have_count(5)
        for kind in ("a2a_message", "confirmation", "held_command", "draft", "escalation"):
            expect(page.locator(f'#inbox-items article[data-kind="{kind}"]')).to_have_count(1)
        expect(page.locator('article[data-kind="a2a_message"]')).to_contain_text("buy my course")
        expect(page.locator('article[data-kind="confirmation"] a.inbox-thread')).to_have_attribute(
            "href", f"/?thread={made['thread']}")
        shot(page, "inbox")

        other = page.context.new_page()  # another tab: its count follows the feed
        other.console_errors = []
        other.on("console", lambda m: other.console_errors.append(m.text) if m.type == "error" else None)
        other.goto(web.url + "/mind")
        expect(_count(other)).to_have_text("5")
        # the person clicks in the tab in front; the other follows in the background (a click in a tab
        # behind waited seconds for frames the browser does not draw there)
        page.bring_to_front()
        page.locator('article[data-kind="held_command"] button.decide-drop').click()
        expect(page.locator('article[data-kind="held_command"]')).to_have_count(0)
        expect(_count(page)).to_have_text("4")
        expect(_count(other)).to_have_text("4")
        page.locator('article[data-kind="draft"] button.decide-accept').click()
        expect(page.locator('article[data-kind="drafts_accepted"]')).to_be_visible()
        page.locator('article[data-kind="drafts_accepted"] button.decide-commit').click()
        expect(page.locator('article[data-kind^="draft"]')).to_have_count(0)
        assert (web.home / "workspace" / "plan.txt").read_bytes() == b"step one\n"
        expect(_count(other)).to_have_text("3")
        page.on("dialog", lambda d: d.accept())
        page.locator("button.reject-all-held").click()
        expect(page.locator('article[data-kind="a2a_message"]')).to_have_count(0)
        expect(_count(other)).to_have_text("2")
        assert web.get("/api/a2a/held") == []
        page.locator('article[data-kind="escalation"] button.decide-dismiss').click()
        expect(page.locator('article[data-kind="escalation"]')).to_have_count(0)
        expect(_count(page)).to_have_text("1")

        # the confirmation asked in the conversation, there with its buttons; answered there
        page.goto(web.url + f"/?thread={made['thread']}")
        inline = page.locator('#inbox-inline article[data-kind="confirmation"]')
        expect(inline).to_contain_text("Your calendar is empty")
        shot(page, "inbox_inline")
        inline.locator("button.decide-approve").click()
        expect(inline).to_have_count(0)
        expect(_count(page)).to_have_text("0")
        expect(_count(other)).to_have_text("0")
        decided = web.on_db(lambda db: db.conn.execute("SELECT status, decided_by FROM gate_confirmations WHERE"
                                                         " id = ?", (made["asked"],)).fetchone())
        assert decided == ("approved", "web")
        # one asked while the thread is open appears in it live
        _ask_in(web, made["first"], "A second answer")
        expect(page.locator('#inbox-inline article[data-kind="confirmation"]')).to_contain_text("A second answer")
        expect(_count(page)).to_have_text("1")
        assert not [e for e in page.console_errors + other.console_errors if "Content Security Policy" in e]
    finally:
        web.stop()
