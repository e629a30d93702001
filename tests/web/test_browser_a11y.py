"""Accessibility of every page in real Chromium: axe-core (bundled by axe-playwright-python) finds no
serious or critical violation, in the light and the dark scheme, with data on the pages; and the first
Tab stop of every page is a visible "Skip to content" link that moves the focus to the main content.

The axe answers are kept as .artifacts/axe/<page>-<scheme>.json (every violation, minor ones too)."""

from __future__ import annotations

import json

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from browsing import ROOT, login
from notebook_pages import LOOKED_AT_MIND, fill, ready_selector, served
from webharness import agent_node

pytestmark = pytest.mark.browser

BLOCKING = ("serious", "critical")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("a11y"), env=LOOKED_AT_MIND) as web:
        fill(web)
        yield web


def readable(name: str, scheme: str, violations: list[dict]) -> str:
    """One paragraph per violation: rule, impact, what axe says, and where (selector and markup)."""
    lines = []
    for v in violations:
        lines.append(f"{name} ({scheme}): {v['id']} [{v['impact']}] {v['help']} ({v['helpUrl']})")
        for n in v["nodes"][:8]:
            lines.append(f"    at {' '.join(map(str, n['target']))}: {n['html'][:160]}")
            for check in n.get("any", []) + n.get("all", []) + n.get("none", []):
                lines.append(f"        {check['message']}")
        if len(v["nodes"]) > 8:
            lines.append(f"    ... and {len(v['nodes']) - 8} more")
    return "\n".join(lines)


def open_page(page, node, name: str, path: str) -> None:
    page.goto(node.url + path)
    expect(page.locator(ready_selector(name)).first).to_be_attached()
    if name != "login":
        expect(page.locator("#nav .mode")).not_to_have_text("?")  # the header has its status


def test_axe_finds_no_serious_violation_on_any_page(page, node):
    axe = Axe()
    out = ROOT / ".artifacts" / "axe"
    out.mkdir(parents=True, exist_ok=True)
    pages = served(node)
    assert {"conversation", "mind", "goals", "review", "mesh", "knowledge", "reactor", "login"} <= set(pages)
    found, checked = [], []
    login(page, node)
    for name, (path, _) in pages.items():
        if name == "login":
            continue  # checked below, without a session
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            open_page(page, node, name, path)
            result = axe.run(page).response
            (out / f"{name}-{scheme}.json").write_text(json.dumps(result["violations"], indent=1))
            found += [(name, scheme, v) for v in result["violations"] if v["impact"] in BLOCKING]
            checked.append(f"{name}-{scheme}")
    page.goto("about:blank")  # off the last page first: logged out, a page still loading goes to /login itself
    page.context.clear_cookies()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        open_page(page, node, "login", "/login")
        expect(page.locator("#login-form")).to_be_visible()  # no token in the address: the form shows
        result = axe.run(page).response
        (out / f"login-{scheme}.json").write_text(json.dumps(result["violations"], indent=1))
        found += [("login", scheme, v) for v in result["violations"] if v["impact"] in BLOCKING]
        checked.append(f"login-{scheme}")
    assert len(checked) >= 16, checked
    assert not found, "axe-core: serious or critical violations\n" + "\n".join(
        readable(name, scheme, [v]) for name, scheme, v in found)


def test_a_skip_link_is_the_first_tab_stop_of_every_page(page, node):
    login(page, node)
    for name, (path, _) in served(node).items():
        if name == "login":
            continue
        open_page(page, node, name, path)
        skip = page.locator("a.skip-link")
        expect(skip).to_have_text("Skip to content")
        assert skip.bounding_box()["y"] < 0, f"{name}: the skip link shows before it has the focus"
        page.keyboard.press("Tab")
        expect(skip).to_be_focused()
        box = skip.bounding_box()
        assert box["y"] >= 0 and box["height"] > 0, f"{name}: the focused skip link is out of sight: {box}"
        page.keyboard.press("Enter")
        expect(page.locator("#main")).to_be_focused()
        assert page.url.endswith("#main"), page.url
    page.goto("about:blank")
    page.context.clear_cookies()
    page.goto(node.url + "/login")
    page.keyboard.press("Tab")
    expect(page.locator("a.skip-link")).to_be_focused()


def test_axe_runs_under_the_csp_and_reports_what_it_finds(page, node):
    """The check above can fail: a control without a name, put on a page, is a critical violation."""
    login(page, node)
    open_page(page, node, "goals", "/goals")
    page.evaluate("document.getElementById('main').append(document.createElement('button'))")
    violations = Axe().run(page).response["violations"]
    named = [v for v in violations if v["id"] == "button-name"]
    assert named and named[0]["impact"] == "critical", readable("goals", "light", violations)
    assert "button-name" in readable("goals", "light", named)
