"""The mesh page with a second node: the peer shows up connected (live, by a peer event), with its name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import login
from meshharness import Node
from webharness import WebNode

pytestmark = pytest.mark.browser


def test_mesh_page(page, tmp_path):
    web = WebNode(tmp_path, name="alice")
    bob = Node(tmp_path, "bob", env={"MESHNODE_WEB_LISTEN": "127.0.0.1:0"})
    try:
        login(page, web)
        page.goto(web.url + "/mesh")
        expect(page.locator("#peers .body")).to_contain_text("no peers known yet")
        bob.set_bootstrap(web.node)
        bob.start()
        row = page.locator(f'#peers tr[data-did="{bob.did}"]')
        expect(row.locator("td").nth(1)).to_have_text("connected", timeout=30_000)  # live: a peer event, no reload
        expect(row.locator("td").first).to_have_text("bob")  # his name comes with the exchange that follows
        expect(row.locator("td .who")).to_have_attribute("title", bob.did)
        expect(page.locator("#nav .peers")).to_have_text("1 peer connected")
        row.locator("button", has_text="Ping").click()
        expect(page.locator("#peers .body p.muted")).to_contain_text(" ms")
    finally:
        bob.stop()
        web.stop()
