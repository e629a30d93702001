"""The mesh page with a second node: the peer shows up connected (live, by a peer event), with its name;
the person renames it (a petname, this node only), sees the new name, a taken petname refused, and
forgets it again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import csp_errors, login, shot
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
        # rename bob: a petname the person reads wherever bob was shown, kept on this node only
        rename = row.locator("details.rename")
        rename.locator("summary").click()
        rename.get_by_label("petname (this node only)").fill("Robert")
        rename.get_by_role("button", name="Save").click()
        expect(row.locator("td").first).to_have_text("Robert calls itself bob")
        expect(row.locator("td .who")).to_have_attribute("title", bob.did)
        assert next(n for n in web.get("/api/names") if n["did"] == bob.did)["petname"] == "Robert"
        expect(rename).not_to_have_attribute("open", "")  # closed once saved
        # the same petname for another agent is refused in the banner (409 petname_taken)
        web.post("/api/names", {"agent": web.node.did, "petname": "me"})
        rename.locator("summary").click()
        rename.get_by_label("petname (this node only)").fill("me")
        rename.get_by_role("button", name="Save").click()
        expect(page.locator("#error-banner")).to_contain_text("petname_taken")
        shot(page, "mesh-rename")
        rename.get_by_role("button", name="Forget petname").click()
        expect(row.locator("td").first).to_have_text("bob")
        expect(rename.get_by_role("button", name="Forget petname")).to_be_hidden()
        assert csp_errors(page) == []
    finally:
        bob.stop()
        web.stop()
