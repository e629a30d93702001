"""Browser tests: Playwright's sync API driving Debian's Chromium against a real `meshnode run`.

No `playwright install` (it downloads a browser build): the browser is `$MESHNODE_CHROMIUM` or the
`chromium` on PATH (`make browser` installs Debian's). Without one the tests are skipped, except
under `CI=true`, where a missing browser means the install broke and is a failure. One browser serves
the whole run; each test gets its own browser context and page, and a screenshot of the page when it ends
(`$MESHNODE_SCREENSHOTS`, default `.artifacts/screenshots/<test>.png`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # llmharness, webharness, meshharness
sys.path.insert(0, str(Path(__file__).resolve().parent))

from browsing import TIMEOUT_MS, chromium_path, shot  # noqa: E402


@pytest.fixture(scope="session")
def browser():
    """One Chromium per pytest process (a worker of ``make test`` runs the browser files it is given one
    after another): Playwright's driver and Chromium start in ~2.5 s and ~1 CPU-s, once and not for each
    file. Tests never share more than the browser: each gets its own context (``page``)."""
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
