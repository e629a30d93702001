"""Validation by peers: who is trusted to validate, and the exchange messages that carry it."""

from __future__ import annotations

import pytest

from meshnode.engines.cognition import peer_validation
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange
from meshnode.store import Database
from meshnode.store.sharing import set_friend

KEYS = [NodeKey(bytes([i]) * 32) for i in (1, 2, 3, 4)]
FRIEND, TRUSTED, STRANGER, DOUBTED = (k.did for k in KEYS)


def test_friends_and_well_trusted_peers_validate_strangers_do_not(tmp_path):
    db = Database(tmp_path / "db.sqlite")
    set_friend(db, FRIEND, KEYS[0].peer_id, 0)
    with db.transaction() as conn:
        conn.executemany("INSERT INTO agent_peers (id) VALUES (?)", [(TRUSTED,), (DOUBTED,)])
        conn.executemany("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES (?, ?)",
                         [(TRUSTED, 0.9), (DOUBTED, 0.2)])
    got = peer_validation.trusted(db, [FRIEND, TRUSTED, STRANGER, DOUBTED], 0.7)
    assert set(got) == {FRIEND, TRUSTED} and got[TRUSTED] == 0.9
    assert peer_validation.choose(got, 1) == [(TRUSTED, 0.9)]  # the most trusted first
    assert [d for d, _ in peer_validation.choose(got, 5)] == [TRUSTED, FRIEND]
    assert set(peer_validation.trusted(db, [FRIEND, TRUSTED, STRANGER], 0.0)) == {FRIEND, TRUSTED, STRANGER}


def test_validate_requests_and_verdicts_are_checked_at_the_edge():
    op, (prompt, answer) = exchange.parse_request({"op": "validate", "prompt": "p", "answer": "a"})
    assert (op, prompt, answer) == ("validate", "p", "a")
    for bad in ({"op": "validate", "prompt": "p"}, {"op": "validate", "prompt": 1, "answer": "a"},
                {"op": "validate", "prompt": "p", "answer": ""},
                {"op": "validate", "prompt": "p", "answer": "x" * (exchange.MAX_VALIDATE_CHARS + 1)}):
        with pytest.raises(exchange.ExchangeError) as info:
            exchange.parse_request(bad)
        assert info.value.code == "bad_request"
    assert exchange.check_response(exchange.verdict(-3, "no"), "verdict")["rating"] == -3
    for bad in ({"op": "verdict", "rating": 4, "comment": ""}, {"op": "verdict", "rating": True, "comment": ""},
                {"op": "verdict", "rating": 1, "comment": "x" * 101}, {"op": "verdict", "rating": 1.5, "comment": ""}):
        with pytest.raises(exchange.ExchangeError) as info:
            exchange.check_response(bad, "verdict")
        assert info.value.code == "bad_response"
