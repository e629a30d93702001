"""The team scenario's finished goal tree on /goals in real Chromium (bench/team.py, plain run, small):
the person sees the goal closed, its three tasks done, who did each and (opened) a result with its
review; the screenshot is kept
(tests/web/conftest.py: .artifacts/screenshots/<test>.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browsing import login, shot
from test_team import load_bench

pytestmark = pytest.mark.browser


class _Web:
    """What ``browsing.login`` needs of a node: its CLI (``web url``) and its web address."""

    def __init__(self, node):
        self.node, self.url = node, node.web_url.rstrip("/")


def test_the_finished_goal_tree_on_goals(page, tmp_path):
    seen = {}

    def look(team, lineage):
        web = _Web(team.nodes["alice"])
        login(page, web)
        page.goto(web.url + "/goals")
        goal = page.locator("#goals .goal", has_text="Team report")
        expect(goal).to_be_visible()
        for title in ("gather facts", "write summary", "check figures"):
            expect(goal.locator("li.task", has_text=title)).to_contain_text("completed")
        fold = goal.locator("li.task", has_text="write summary").locator("details.result")
        fold.locator("summary").click()  # the result, read when opened
        expect(fold).to_contain_text("did 'write summary'")
        expect(fold).to_contain_text("reviewed: accepted")
        expect(goal).not_to_contain_text("next check")  # nothing left to check on a finished task
        seen["text"] = goal.inner_text()
        # a live update redraws the tree: the fold the person opened stays open, its result shown
        team.nodes["alice"].call("goal_add", {"title": "Another goal"})
        expect(page.locator("#goals .goal", has_text="Another goal")).to_be_visible()
        expect(fold).to_contain_text("reviewed: accepted")
        shot(page, "team_goal_tree")

    out = load_bench().run("plain", tmp_path, True, print, after=look)
    assert out.get("completed"), out
    assert "bob" in seen["text"] or "carol" in seen["text"], seen
