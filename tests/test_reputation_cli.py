"""``meshnode reputation list|show`` (no node running: they read the database directly)."""

from __future__ import annotations

import json

from test_cli import one_error_line

from meshnode.base.container import now_ms
from meshnode.base.identity import NodeKey
from meshnode.domain.reputation import Evidence
from meshnode.records.reputation.records import record_equivocation, record_evidence
from meshnode.domain.reputation.statements import build_trust
from meshnode.store import Database
from meshnode.store.peers import upsert_peer


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def seed(home, good: NodeKey, bad: NodeKey, friend: NodeKey) -> None:
    t = now_ms()
    db = Database(home / "data" / "meshnode.db", create=False)
    try:
        upsert_peer(db, good.did, peer_id="p", now_ms=t, source="discovery", name="good\x1b[31m")
        record_evidence(db, good.did, [Evidence("task_success", t, 30)], now_ms=t)
        record_evidence(db, bad.did, [Evidence("valid_container", t, 5)], now_ms=t)
        record_equivocation(db, bad.did, "did:hmp:container:uEiAproof", now_ms=t)
        db.put_container(build_trust(good, friend.did, 0.9, now_ms=t), received_at_ms=t)
    finally:
        db.close()


def test_list_and_show(run_cli, home):
    assert ok(run_cli("--home", home, "reputation", "list")) == ""  # nothing into a pipe ("(none)" on a terminal)
    assert json.loads(ok(run_cli("--home", home, "reputation", "list", "--json"))) == []
    good, bad, friend = NodeKey.generate(), NodeKey.generate(), NodeKey.generate()
    seed(home, good, bad, friend)

    rows = json.loads(ok(run_cli("--home", home, "reputation", "list", "--json")))
    assert [(r["did"], r["basis"]) for r in rows] == [(good.did, "direct"), (friend.did, "transitive"),
                                                     (bad.did, "direct")]
    assert rows[0]["trust_level"] == "high" and rows[2]["score"] <= 0.05 and rows[2]["capped_until"]
    assert rows[1]["via"] == [good.did]
    text = ok(run_cli("--home", home, "reputation", "list"))
    lines = text.splitlines()
    assert len(lines) == 3 and lines[0].startswith("0.893  high") and "\x1b" not in text
    assert "good__31m" in lines[0]  # a peer's name is cleaned where names are made (store.names)
    assert "capped until" in lines[2] and f"via {good.did}" in lines[1]

    shown = json.loads(ok(run_cli("--home", home, "reputation", "show", bad.did, "--json")))
    assert shown["counts"] == {"equivocation": 1, "valid_container": 5}
    assert shown["evidence"][0]["ref"] == "did:hmp:container:uEiAproof"
    text = ok(run_cli("--home", home, "reputation", "show", bad.did))
    assert "capped until" in text and "equivocation 1" in text and "history:" in text
    text = ok(run_cli("--home", home, "reputation", "show", friend.did))
    assert "transitive" in text and "statements by others:" in text and good.did in text


def test_show_refuses_unknown_and_malformed_dids(run_cli, home):
    assert "nothing is known" in one_error_line(
        run_cli("--home", home, "reputation", "show", NodeKey.generate().did))
    assert "not a DID" in one_error_line(run_cli("--home", home, "reputation", "show", "bob"))
