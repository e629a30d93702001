"""The notebook's pages as the accessibility, screenshot and bench runs see them: where each is, what
shows that its main content is drawn, and a node with something on every page.

One table (``PAGES``) for tests/web/test_browser_a11y.py, tests/web/test_browser_screens.py and
bench/web.py. A page is drawn when ``body[data-ready]`` is set (a page that marks its first render)
or, until pages mark it, when its first list has loaded (a list with nothing in it says so too:
``p.empty``, ``li.empty``). A page the node does not serve (404: /inbox before it exists) is left out.
"""

from __future__ import annotations

from meshharness import wait_until

# name -> (path, what is on screen once the page's main content is drawn)
PAGES = {
    "conversation": ("/", "#threads > li"),
    "mind": ("/mind", "#tick-list > *"),
    "goals": ("/goals", "#goals .body > *"),
    "review": ("/review", "#drafts .body > *"),
    "mesh": ("/mesh", "#peers .body > *"),
    "knowledge": ("/knowledge", "#note-list > *"),
    "reactor": ("/reactor", "#reactor-status .body > *"),
    "inbox": ("/inbox", "#main > :not(h1)"),
    "login": ("/login", "#login-status"),
}

READY_MARK = "body[data-ready]"

# the agent of a node whose pages are only looked at (accessibility, screenshots): it thinks once a second,
# not every 0.2 s (webharness.FAST_MIND): its ticks are on the pages all the same, and its node and the
# browser's live pages spend a fifth of a core less on ticks nobody waits for
LOOKED_AT_MIND = {"MESHNODE_COGNITION_PAUSE_SECONDS": "1"}


def ready_selector(name: str) -> str:
    return f"{READY_MARK}, {PAGES[name][1]}"


def served(node) -> dict[str, tuple[str, str]]:
    """The pages this node serves (a page added later, /inbox, is left out while it answers 404)."""
    out = {}
    with node.client(follow_redirects=False) as client:  # Bearer: a page answers, a missing one 404s
        for name, (path, ready) in PAGES.items():
            if client.get(path).status_code != 404:
                out[name] = (path, ready)
    return out


def fill(node, *, notes: int = 3) -> None:
    """Something on every page: a conversation, a goal with its description and a task for the agent,
    notes, and (the agent thinking: ``agent_node``) at least one tick."""
    node.post("/api/threads", {"text": "Could you keep an eye on the **balcony** tomatoes?"})
    goal = node.post("/api/goals", {"title": "Grow tomatoes on the balcony",
                                    "description": "Six plants, *cherry* and plum, in the big pots."})
    task = node.post("/api/tasks", {"goal": goal["lineage"], "title": "Water them each morning"})
    node.post(f"/api/tasks/{task['lineage']}/assign", {"candidates": [node.get("/api/status")["did"]]})
    for i in range(notes):
        node.post("/api/notes", {"text": f"Seed note {i}: the seeds came from the market on Saturday.",
                                 "topic": "garden"})
    if node.llm is not None:
        wait_until(lambda: node.get("/api/mind/ticks"), 60, "the agent's first tick")
