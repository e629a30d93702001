"""Issue 37 through a running cognitive cycle (in-process, a scripted LLM over loopback): an offer
whose delivery receipt this node has signed is in the prompt of every tick, not only of a reactor
wake, and the agent accepts it by the short id the prompt shows."""

from __future__ import annotations

import json

import trio

import cyclelab
from cyclelab import answer_with, until
from meshnode.base.container import now_ms
from meshnode.records.gmp import service
from meshnode.store import Database
from test_cognition_gmp import A, B, copy_all, run


def test_an_offer_is_in_every_tick_s_prompt_and_accepted_by_its_short_id(tmp_path):
    t0 = now_ms()
    a = Database(tmp_path / "a.db")
    goal = run(a, A, t0, "goal_add", {"title": "map the river", "participants": [B.did],
                                      "criteria": ["every ford marked"]})
    task = run(a, A, t0 + 1, "task_add", {"title": "survey the ford", "goal": goal["goal"]})
    offer = run(a, A, t0 + 2, "task_delegate", {"task": task["task"], "to": [B.did]})

    def prepare(db):
        copy_all(a, db)
        assert service.on_admitted(db, B, t0 + 3, [offer["did"]])["published"]  # B's node: the receipt

    accept = {"cmd_id": "acc", "type": "task_accept", "args": {"task": task["task"]}}
    answers = [answer_with(0), answer_with(1, accept), answer_with(2), answer_with(3)]

    async def main():
        async with cyclelab.running_cycle(tmp_path, answers, prepare=prepare, key=B, pause_s=0.01) as (cycle, store,
                                                                                                          llm):
            await until(lambda: len(llm.seen()) >= 3, what="three ticks")
            prompts = [r["messages"][1]["content"] for r in llm.seen()]
            for text in prompts[:2]:  # ticks, no wake: the offer is there each time
                assert "\n## Wake\n" not in text
                waiting = text.split("## Waiting for you")[1].split("\n## ")[0]
                assert "offers_to_answer" in waiting and "survey the ford" in waiting and task["task"] in waiting
                assert "every ford marked" in text  # the goal's criterion
            done = await store.read(lambda db: db.conn.execute(
                "SELECT value FROM process_log WHERE name = 'cmd:acc'").fetchone())
            assert json.loads(done[0])["status"] == "ok", done
            assert "offers_to_answer" not in prompts[2]  # answered

    try:
        trio.run(main)
    finally:
        a.close()
