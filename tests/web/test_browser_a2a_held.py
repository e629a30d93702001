"""/review's held A2A messages: what unknown parties sent waits in a table of its own; the person blocks
a sender's address from there (its message is rejected, the block listed), unblocks it, and rejects
the rest at once."""

from __future__ import annotations


import httpx
import pytest
from playwright.sync_api import expect

from browsing import a2a_stranger_body, login
from webharness import WebNode

pytestmark = pytest.mark.browser


def _stranger(web, text: str, sender: str, source: str) -> dict:
    body = a2a_stranger_body(text, sender)
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=30) as http:
        return http.post(web.url + "/a2a", json=body).json()["result"]


def test_held_a2a_messages_are_blocked_and_rejected_on_review(page, tmp_path):
    web = WebNode(tmp_path)
    try:
        first = _stranger(web, "buy my course", "did:key:zSpam", "127.0.0.7")
        second = _stranger(web, "hello there", "did:key:zNice", "127.0.2.9")
        login(page, web)
        page.goto(web.url + "/review")
        spam = page.locator(f'#a2a-held tr[data-id="{first["id"].split("-")[1]}"]')
        expect(spam).to_contain_text("buy my course")
        expect(spam).to_contain_text("127.0.0.0/24")
        page.on("dialog", lambda d: d.accept())
        spam.locator("button.block-address").click()
        expect(page.locator('#a2a-blocks tr[data-target="127.0.0.7/32"]')).to_be_visible()
        expect(spam).to_have_count(0)
        assert web.get("/api/a2a/blocks")[0]["decided_by"] == "web"
        page.locator('#a2a-blocks tr[data-target="127.0.0.7/32"] button.unblock').click()
        expect(page.locator("#a2a-blocks .body")).to_contain_text("nobody is blocked")
        nice = page.locator(f'#a2a-held tr[data-id="{second["id"].split("-")[1]}"]')
        expect(nice).to_contain_text("did:key:zNice")
        page.locator("#a2a-held button.reject-all-held").click()
        expect(page.locator("#a2a-held .body")).to_contain_text("no A2A message waits for you")
        assert web.get("/api/a2a/held") == []
    finally:
        web.stop()
