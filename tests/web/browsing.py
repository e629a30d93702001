"""Helpers of the browser tests: where Chromium is, screenshots, logging in by the link."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

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


def login_link(node) -> str:
    """The link `meshnode web url` prints for this running node: on the port it bound (the test
    nodes listen on port 0, which `web url` learns from the node)."""
    out = node.node.cli("web", "url")
    link = next(word for word in out.split() if "/login#t=" in word)
    assert link.startswith(node.url.rstrip("/") + "/login#t="), (link, node.url)
    return link


def login(page, node) -> None:
    """Open the login link as the person does; wait until the conversation page is shown."""
    page.goto(login_link(node))
    page.wait_for_url(node.url.rstrip("/") + "/")
    page.locator("#nav .node-name").wait_for()


def csp_errors(page) -> list[str]:
    return [e for e in page.console_errors if "Content Security Policy" in e or "Content-Security-Policy" in e]


def a2a_stranger_body(text: str, sender: str) -> dict:
    """A ``message/send`` body as an a2a-sdk 0.3 client sent it (tests/golden/a2a_v03, recorded), from
    an unknown party claiming ``sender``, saying ``text``."""
    import json
    import uuid

    golden = Path(__file__).resolve().parent.parent / "golden" / "a2a_v03" / "message_send_unknown.json"
    body = json.loads(golden.read_text().replace("MESSAGE_ID", uuid.uuid4().hex).replace("REQUEST_ID", "1"))["json"]
    body["params"]["message"]["parts"][0]["text"] = text
    body["params"]["message"]["metadata"]["sender"] = sender
    return body
