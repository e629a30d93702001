"""The person's work on the agent's side in real Chromium: a goal and a task given on /goals reach
the agent's prompt; a draft the agent wrote is accepted, committed and rolled back on /review; a
destructive tool call waits for the person's approval there."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browsing import login
from llmharness import command_block, prompt_section
from meshharness import wait_until
from webharness import agent_node

pytestmark = pytest.mark.browser

IDLE = "Nothing needs doing now; I wait for the person."


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("work"), [IDLE]) as web:
        yield web


def _go(page, web, path):
    page.goto(web.url + path)


def test_goals_live(page, agent):
    """A goal made elsewhere (here the API; the CLI alike) shows up on an open /goals page."""
    login(page, agent)
    _go(page, agent, "/goals")
    expect(page.locator("#goals .body > *").first).to_be_visible()
    agent.post("/api/goals", {"title": "Mend the fence"})
    expect(page.locator("#goals .goal .title", has_text="Mend the fence")).to_be_visible()


def test_goal_in_context(page, agent):
    login(page, agent)
    _go(page, agent, "/goals")
    form = page.locator("form.goal-form")
    form.locator("input[name=title]").fill("Grow tomatoes on the balcony")
    form.locator("button[type=submit]").click()
    goal = page.locator("#goals .goal", has_text="Grow tomatoes on the balcony")
    expect(goal).to_be_visible()
    me = agent.get("/api/status")["did"]
    goal.locator("form.task-form input[name=title]").fill("Buy seeds")
    goal.locator("form.task-form select[name=assignee]").select_option(me)
    seen = len(agent.llm.prompts())
    goal.locator("form.task-form button[type=submit]").click()
    task = goal.locator("li.task", has_text="Buy seeds")
    expect(task).to_be_visible()
    expect(task).to_contain_text("held by")
    assert not page.locator("#error-banner").is_visible()
    status = task.locator("form.status-form")
    expect(status.locator("select[name=status] option[value=in_progress]")).to_have_count(1)  # the route's choices
    status.locator("select[name=status]").select_option("in_progress")
    status.locator("button[type=submit]").click()
    expect(task.locator(".badge")).to_have_text("in_progress")

    def named_in_context_3():
        return [p for p in agent.llm.prompts()[seen:]
                if "Grow tomatoes on the balcony" in prompt_section(p, "Goals and tasks (context 3)")
                and "Buy seeds" in prompt_section(p, "Goals and tasks (context 3)")]
    wait_until(named_in_context_3, 20, "a prompt whose context 3 names the new goal and its task")


def test_draft_commit_rollback(page, agent, tmp_path):
    workspace = agent.home / "workspace"
    target = workspace / "plan.txt"
    assert not target.exists()
    agent.llm.append("I write the plan down. " + command_block(
        {"cmd_id": "w1", "type": "write_file", "args": {"path": "plan.txt", "content": "step one\nstep two\n"}}), IDLE)
    login(page, agent)
    _go(page, agent, "/review")
    draft = page.locator('#drafts .draft[data-path="plan.txt"]')
    expect(draft).to_be_visible(timeout=30_000)  # live: a draft event, no reload
    expect(draft.locator("pre.diff .add", has_text="+step one")).to_be_visible()
    draft.locator("button.accept").click()
    expect(draft).to_have_attribute("data-status", "accepted")
    commit = page.locator("form.commit-form")
    commit.locator("input[name=message]").fill("the plan, reviewed")
    seen = len(agent.llm.prompts())
    commit.locator("button[type=submit]").click()
    expect(page.locator("#drafts .draft")).to_have_count(0)
    assert target.read_text() == "step one\nstep two\n"
    row = page.locator("#snapshots tbody tr").first
    expect(row).to_contain_text("plan.txt")
    page.once("dialog", lambda d: d.accept())
    row.locator("button.rollback").click()
    wait_until(lambda: not target.exists(), 10, "the rollback to remove plan.txt again")
    told = wait_until(lambda: [p for p in agent.llm.prompts()[seen:] if "gate:rollback" in prompt_section(p, "(context 4)")],
                      20, "the rollback in the agent's context 4")
    context4 = prompt_section(told[0], "(context 4)")
    assert "gate:accept" in context4 and "gate:commit" in context4, context4  # each decision, in order


def test_confirmation(page, agent):
    workspace = agent.home / "workspace"
    workspace.mkdir(exist_ok=True)
    (workspace / "old.txt").write_text("stale\n")
    agent.llm.append("The old file is stale. " + command_block(
        {"cmd_id": "d1", "type": "delete_file", "args": {"path": "old.txt"}}), IDLE)
    pending = wait_until(lambda: agent.get("/api/confirmations"), 20, "the delete waiting for a confirmation")
    login(page, agent)
    _go(page, agent, "/review")
    row = page.locator(f'#confirmations tr[data-id="{pending[0]["id"]}"]')
    expect(row).to_contain_text("delete_file")
    expect(row).to_contain_text("old.txt")
    row.locator("button.approve").click()
    # approved, and then at once the gate carries it out: the row may already say done
    expect(row).to_contain_text(re.compile(r"approved|done"))
    # approved, the agent's next tick runs it: the deletion becomes a draft the person reviews (live)
    expect(page.locator('#drafts .draft[data-path="old.txt"]')).to_contain_text("deletes the file", timeout=30_000)
    assert agent.get("/api/confirmations", all=True)[0]["status"] != "pending"
