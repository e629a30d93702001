"""The validators of the validation reflex (issue 12, items 11 and 19): one that keeps failing is set
aside (and asked again later) instead of holding every command; each validator's weight adapts to
how well it agrees with the panel. Real nodes thinking with scripted LLMs over real HTTP."""

from __future__ import annotations

import json
import re
import sqlite3

from llmharness import distinct_answers
from meshharness import Node, wait_until

def _count(node: Node, sql: str) -> int:
    conn = sqlite3.connect(node.home / "data" / "meshnode.db")
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def test_a_validator_answering_out_of_form_is_set_aside_then_asked_again_later(tmp_path, llms):
    main = llms("main", distinct_answers(300))
    confused = llms("confused", ["Looks fine to me, I suppose."])  # never "<rating> -- <comment>"
    steady = llms("steady", ["+2 -- sound"])
    node = Node(tmp_path, "mind", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2",
                                       "MESHNODE_COGNITION_VALIDATOR_FAILURES": "2",
                                       "MESHNODE_COGNITION_VALIDATOR_RETRY_SECONDS": "3"})
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m")
        node.cli("llm", "add", "confused", "--url", confused.url, "--model", "m", "--validator")
        node.cli("llm", "add", "steady", "--url", steady.url, "--model", "m", "--validator")
        node.start()
        # after two failures in a row it is set aside; the validator that answers carries on alone
        wait_until(lambda: _count(node, "SELECT count(*) FROM process_log WHERE name = 'validator_set_aside'") >= 1,
                   60, "the confused validator to be set aside")
        mind = node.call("status")["cognition"]
        failing = mind["validators_failing"]["confused"]
        assert failing["set_aside"] and failing["failures_in_row"] >= 2
        assert failing["last_error"].startswith("out of form: 'Looks fine")
        assert re.search(r"confused set aside after \d+ failures in a row \(out of form", node.cli("status"))
        shown = node.cli("mind")
        assert re.search(r"confused .*\n +set aside after \d+ failures in a row", shown), shown
        # answers taken while it was aside are judged by the other validator, not passed unvalidated
        def aside_ticks():
            conn = sqlite3.connect(node.home / "data" / "meshnode.db")
            try:
                ticks = [json.loads(v) for (v,) in conn.execute("SELECT value FROM process_log WHERE name = 'tick'")]
            finally:
                conn.close()
            return [t for t in ticks if t.get("set_aside") == ["confused"]]
        wait_until(lambda: any(t["ran"] for t in aside_ticks()), 60, "an answer judged while it is aside")
        assert not any(t["auto_pass"] for t in aside_ticks())
        # a failing validator vetoes nothing while another gives verdicts
        assert _count(node, "SELECT count(*) FROM held_commands") == 0
        # after the retry time it is asked again; still out of form, so set aside again
        asked = len(confused.seen())
        wait_until(lambda: len(confused.seen()) > asked, 60, "the validator to be asked again")
        wait_until(lambda: _count(node, "SELECT count(*) FROM process_log WHERE name = 'validator_set_aside'") >= 2,
                   30, "it to be set aside again")
        node.stop()
        log = "\n".join(node.drain())
        assert log.count("validator confused set aside") >= 2
        # a person is warned the first time it is set aside, not at every retry; nothing stalled
        assert log.count("WARNING meshnode.engines.cognition: validator confused set aside") == 1
        assert "commands are held" not in log
    finally:
        node.kill()


def test_validator_weights_adapt_to_agreement_so_one_dissenter_cannot_hold_everything(tmp_path, llms):
    main = llms("main", distinct_answers(300))
    # two validators agree the answers are sound; one rates everything harmful
    one = llms("one", ["+2 -- sound"])
    two = llms("two", ["+2 -- sound, nothing to add"])
    grim = llms("grim", ["-3 -- everything is harmful"])
    node = Node(tmp_path, "mind", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2"})
    try:
        node.cli("llm", "add", "main", "--url", main.url, "--model", "m")
        for v in (one, two, grim):
            node.cli("llm", "add", v.script.stem, "--url", v.url, "--model", "m", "--validator")
        node.start()
        # with equal weights the panel's rating is (2 + 2 - 3) / 3 = +0.33: held for good. As the
        # dissenter keeps standing apart its weight falls, until the panel's verdict carries
        wait_until(lambda: _count(node, "SELECT count(*) FROM llm_memory") >= 1, 120,
                   "the answers to pass once the dissenter's weight has fallen")
        assert _count(node, "SELECT count(*) FROM held_commands WHERE kind = 'rejected'") >= 5
        view = node.call("mind")
        weights = {v["validator"]: v for v in view["validators"]}
        assert weights["grim"]["factor"] < 0.5 <= weights["one"]["factor"] <= 1
        assert weights["grim"]["factor"] >= 0.25  # bounded: it still counts
        assert weights["grim"]["why"].startswith("leans -") and weights["one"]["why"].startswith("leans +")
        assert weights["grim"]["weight"] == round(weights["grim"]["base_trust"] * weights["grim"]["factor"], 3)
        # the record of each verdict keeps the weight it carried, and the base it came from
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")
        try:
            last = json.loads(conn.execute("SELECT validators FROM llm_recent_responses ORDER BY id DESC"
                                           " LIMIT 1").fetchone()[0])
        finally:
            conn.close()
        grim_said = next(v for v in last if v["validator"] == "grim")
        assert grim_said["base_trust"] == 1.0 and grim_said["trust"] < 0.5
        text = node.cli("mind")
        assert "grim" in text and "leans -" in text and "trust 1.00 x" in text
    finally:
        node.kill()
