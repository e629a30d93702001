"""Browser tests: Playwright's sync API driving Debian's Chromium against a real `meshnode run`.

No `playwright install` (it downloads a browser build): the browser is `$MESHNODE_CHROMIUM` or the
`chromium` on PATH (`make browser` installs Debian's). Without one the tests are skipped, except
under `CI=true`, where a missing browser means the install broke and is a failure. Each test gets
its own browser context and page, and a screenshot of the page when it ends
(`$MESHNODE_SCREENSHOTS`, default `.artifacts/screenshots/<test>.png`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # llmharness, webharness, meshharness

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 15_000   # a node on a loaded 2-core machine: generous, and a wait ends as soon as it holds


def chromium_path() -> str:
    path = os.environ.get("MESHNODE_CHROMIUM") or shutil.which("chromium")
    if path:
        return path
    if os.environ.get("CI") == "true":
        pytest.fail("no Chromium under CI=true: `make browser` should have installed Debian's chromium")
    pytest.skip("no Chromium: make browser installs Debian's chromium")


def screenshot_dir() -> Path:
    path = Path(os.environ.get("MESHNODE_SCREENSHOTS") or ROOT / ".artifacts" / "screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def shot(page, name: str) -> Path:
    """Save a full-page screenshot as <name>.png in the screenshot folder."""
    path = screenshot_dir() / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module (launching costs ~0.5-1 s)."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable)
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    """A fresh browser context (no cookies) per test; its screenshot on teardown; console errors
    (a CSP refusal shows up there) are kept on ``page.console_errors``."""
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    context = browser.new_context()
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    try:
        shot(pg, re.sub(r"[^\w.-]+", "_", request.node.name))
    finally:
        context.close()


def login_link(node) -> str:
    """The link `meshnode web url` prints for this node."""
    out = node.node.cli("web", "url")
    return next(word for word in out.split() if "/login#t=" in word)


def login(page, node) -> None:
    """Open the login link as the person does; wait until the conversation page is shown."""
    page.goto(login_link(node))
    page.wait_for_url(node.url.rstrip("/") + "/")
    page.locator("#nav .node-name").wait_for()


def csp_errors(page) -> list[str]:
    return [e for e in page.console_errors if "Content Security Policy" in e or "Content-Security-Policy" in e]
