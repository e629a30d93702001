"""The mesh page with a second node: the peer shows up connected, with its name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import login
from meshharness import Node, wait_until
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
        wait_until(lambda: [p for p in web.get("/api/peers") if p["did"] == bob.did and p["connected"] and p["name"]],
                   30, "bob connected to alice, with his name")
        page.reload()
        row = page.locator(f'#peers tr[data-did="{bob.did}"]')
        expect(row).to_contain_text("bob")
        expect(row).to_contain_text("connected")
        expect(row).not_to_contain_text("not connected")
        expect(page.locator("#nav .peers")).to_have_text("1 peer connected")
        row.locator("button", has_text="Ping").click()
        expect(page.locator("#peers .body p.muted")).to_contain_text(" ms")
    finally:
        bob.stop()
        web.stop()
