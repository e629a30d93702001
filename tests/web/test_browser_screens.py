"""Every page with data on it, as a person sees it on a desktop in the light and the dark scheme and on
a phone (390 x 844): screenshots kept as CI artifacts in .artifacts/screenshots/pages/<page>-<light|dark|phone>.png,
and at phone width nothing runs off the side (the top bar wraps, a wide table scrolls inside its panel)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import login, screenshot_dir
from notebook_pages import LOOKED_AT_MIND, fill, ready_selector, served
from webharness import agent_node

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
DARK_BACKGROUND = "rgb(23, 24, 26)"   # base.css --bg under prefers-color-scheme: dark
LIGHT_BACKGROUND = "rgb(251, 251, 248)"

# the widest thing on the page that is not inside a scrolling box: wider than the window = a sideways scroll
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const node of document.querySelectorAll("body *")) {
    const r = node.getBoundingClientRect();
    if (r.width === 0 || r.right <= width + 1) continue;
    let inside = false;
    for (let p = node.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if ((s.overflowX === "auto" || s.overflowX === "scroll" || s.overflowX === "hidden") && p.getBoundingClientRect().right <= width + 1) { inside = true; break; }
    }
    if (!inside) out.push(`${node.tagName.toLowerCase()}${node.id ? "#" + node.id : ""}${node.className && typeof node.className === "string" ? "." + node.className.split(" ").join(".") : ""} right=${Math.round(r.right)}`);
  }
  return {scroll: document.documentElement.scrollWidth, width, out: out.slice(0, 10)};
}"""


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("screens"), env=LOOKED_AT_MIND) as web:
        fill(web)
        yield web


def show(page, node, name: str, path: str, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    page.goto(node.url + path)
    expect(page.locator(ready_selector(name)).first).to_be_attached()
    expect(page.locator("body")).to_have_css("background-color", DARK_BACKGROUND if scheme == "dark" else LIGHT_BACKGROUND)
    if name != "login":
        expect(page.locator("#nav .mode")).not_to_have_text("?")


def test_every_page_in_light_dark_and_phone_sizes(page, node):
    folder = screenshot_dir() / "pages"
    folder.mkdir(parents=True, exist_ok=True)
    pages = served(node)
    login(page, node)
    saved, wide = [], []
    for name, (path, _) in pages.items():
        if name == "login":  # off the last page first: logged out, a page still loading would go to /login itself
            page.goto("about:blank")
            page.context.clear_cookies()
        for size, scheme in (("light", "light"), ("dark", "dark"), ("phone", "light")):
            page.set_viewport_size(PHONE if size == "phone" else DESKTOP)
            show(page, node, name, path, scheme)
            if size == "phone":
                got = page.evaluate(OVERFLOW)
                if got["scroll"] > got["width"] or got["out"]:
                    wide.append(f"{name}: page {got['scroll']} px wide in a {got['width']} px window: {got['out']}")
                if name != "login":
                    for link in page.locator("#nav a").all():
                        box = link.bounding_box()
                        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], \
                            f"{name}: the top bar's link {link.inner_text()!r} is off the screen at phone width: {box}"
            target = folder / f"{name}-{size}.png"
            page.screenshot(path=str(target), full_page=True)
            saved.append(target)
    assert not wide, "at phone width these run off the side:\n" + "\n".join(wide)
    assert len(saved) == 3 * len(pages) and all(p.stat().st_size > 1000 for p in saved), saved
