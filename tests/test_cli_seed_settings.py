"""``meshnode ethics add|list|remove``, ``meshnode reputation set``, ``meshnode llm update`` (no node
running: they work on the database directly, as a running node's next tick would read it)."""

from __future__ import annotations

import json

from test_cli import one_error_line

from meshnode.engines.cognition.contexts import build
from meshnode.base.container import now_ms
from meshnode.base.identity import NodeKey
from meshnode.domain.reputation.model import Evidence
from meshnode.records.reputation.records import record_equivocation, record_evidence
from meshnode.store import Database


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def _db(home) -> Database:
    return Database(home / "data" / "meshnode.db", create=False)


def test_ethics_add_list_remove_and_context_1(run_cli, home):
    assert ok(run_cli("--home", home, "ethics", "list")) == ""  # a pipe: no lines ("(none)" on a terminal)
    assert json.loads(ok(run_cli("--home", home, "ethics", "list", "--json"))) == []
    out = ok(run_cli("--home", home, "ethics", "add", "privacy", "never share the person's notes without asking",
                     "say when unsure", "--model-type", "deontological", "--on-violation", "stop and tell the person"))
    assert out.strip() == "added privacy (2 principle(s))"
    [policy] = json.loads(ok(run_cli("--home", home, "ethics", "list", "--json")))
    assert policy["principles"] == ["never share the person's notes without asking", "say when unsure"]
    assert policy["set_by"] == "person" and policy["model_type"] == "deontological"
    assert policy["on_violation"] == "stop and tell the person"
    assert "  - say when unsure" in ok(run_cli("--home", home, "ethics", "list"))
    # the prompt's context 1 shows it
    db = _db(home)
    try:
        prompt = build(db, now_ms=1_800_000_000_000, tick=1, recent_k=3, mode="normal", llm_id="x")[1]["content"]
    finally:
        db.close()
    assert "## Ethics policies (context 1)" in prompt and "- never share the person's notes without asking" in prompt
    # a second policy of the same name is refused, a replacement is not; bad input is one line
    assert "exists" in one_error_line(run_cli("--home", home, "ethics", "add", "privacy", "x"))
    ok(run_cli("--home", home, "ethics", "add", "privacy", "only this", "--replace"))
    assert json.loads(ok(run_cli("--home", home, "ethics", "list", "--json")))[0]["principles"] == ["only this"]
    assert "policy name" in one_error_line(run_cli("--home", home, "ethics", "add", "two words", "x"))
    assert "non-blank" in one_error_line(run_cli("--home", home, "ethics", "add", "blank", "  "))
    assert ok(run_cli("--home", home, "ethics", "remove", "privacy")).strip() == "removed privacy"
    assert "no ethics policy" in one_error_line(run_cli("--home", home, "ethics", "remove", "privacy"))
    assert ok(run_cli("--home", home, "ethics", "list")) == ""  # a pipe: no lines ("(none)" on a terminal)


def test_reputation_set_is_a_persons_judgement_in_the_evidence_model(run_cli, home):
    peer, cheat = NodeKey.generate(), NodeKey.generate()
    db = _db(home)
    try:
        record_evidence(db, peer.did, [Evidence("valid_container", 1_700_000_000_000, 3)], now_ms=1_700_000_000_000)
        record_equivocation(db, cheat.did, "did:hmp:container:uEiAproof", now_ms=now_ms())
    finally:
        db.close()
    out = ok(run_cli("--home", home, "reputation", "set", peer.did, "0.8", "--reason", "I know its operator"))
    assert out.strip() == f"trust in {peer.did} set to 0.800"
    shown = json.loads(ok(run_cli("--home", home, "reputation", "show", peer.did, "--json")))
    assert shown["score"] == 0.8 and shown["basis"] == "direct"
    assert shown["counts"] == {"person_set": 1, "valid_container": 3}  # the evidence so far is kept
    assert "I know its operator" in shown["history"][0]["notes"]
    # an equivocator stays under its cap: a proof outweighs an opinion
    out = ok(run_cli("--home", home, "reputation", "set", cheat.did, "0.9"))
    assert "held at 0.050 by an equivocation cap" in out
    # out of range, not a DID, this node itself: one line each, nothing written
    assert "from 0 to 1" in one_error_line(run_cli("--home", home, "reputation", "set", peer.did, "1.5"))
    assert "from 0 to 1" in one_error_line(run_cli("--home", home, "reputation", "set", peer.did, "nan"))
    assert "at most 200" in one_error_line(run_cli("--home", home, "reputation", "set", peer.did, "0.5", "--reason",
                                                    "y" * 201))
    assert "not a DID" in one_error_line(run_cli("--home", home, "reputation", "set", "xyz", "0.5"))
    own = json.loads(ok(run_cli("--home", home, "status", "--json")))["did"]
    assert "own DID" in one_error_line(run_cli("--home", home, "reputation", "set", own, "0.5"))


def test_llm_update_changes_only_what_is_given(run_cli, home):
    ok(run_cli("--home", home, "llm", "add", "local", "--url", "http://127.0.0.1:9/v1", "--model", "m1",
               "--api-key-env", "LOCAL_KEY"))
    out = ok(run_cli("--home", home, "llm", "update", "local", "--timeout", "300", "--priority", "5", "--validator"))
    assert out.strip() == "updated local: validator, priority 5, m1 at http://127.0.0.1:9/v1, timeout 300 s"
    [e] = json.loads(ok(run_cli("--home", home, "llm", "list", "--json")))
    assert e == {"id": "local", "base_url": "http://127.0.0.1:9/v1", "model": "m1", "priority": 5, "validator": True,
                 "api_key_env": "LOCAL_KEY", "timeout_s": 300.0}
    ok(run_cli("--home", home, "llm", "update", "local", "--main", "--no-api-key", "--model", "m2"))
    [e] = json.loads(ok(run_cli("--home", home, "llm", "list", "--json")))
    assert (e["validator"], e["api_key_env"], e["model"], e["timeout_s"]) == (False, None, "m2", 300.0)
    assert "no LLM named" in one_error_line(run_cli("--home", home, "llm", "update", "nope", "--model", "x"))
    assert "http://" in one_error_line(run_cli("--home", home, "llm", "update", "local", "--url", "ftp://x"))
    assert "timeout" in one_error_line(run_cli("--home", home, "llm", "update", "local", "--timeout", "0"))
    nothing = run_cli("--home", home, "llm", "update", "local")
    assert nothing.returncode == 2 and "at least one setting" in nothing.stderr
