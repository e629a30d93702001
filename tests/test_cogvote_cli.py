"""``meshnode consensus vote|status|result|verify`` on the command line (no node running: the
commands work on the database directly). Other voters' votes are written into the home's
database by the test, as if they had arrived from peers."""

from __future__ import annotations

import json

from test_cli import CONTAINER_DID, assert_clean_failure, db_path, one_error_line

from meshnode.domain.consensus.cogvote import Rule, make_vote, tally
from meshnode.domain.consensus.result import build_result, result_payload
from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database

PEERS = [NodeKey(bytes([i]) * 32) for i in range(80, 83)]


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def store(home, *containers) -> None:
    db = Database(db_path(home), create=False)
    try:
        for c in containers:
            db.put_container(c, received_at_ms=now_ms())
    finally:
        db.close()


def load(home, did):
    db = Database(db_path(home), create=False)
    try:
        return db.load_container(did, now_ms=now_ms())
    finally:
        db.close()


def status(run_cli, home, target, *flags) -> dict:
    return json.loads(ok(run_cli("--home", home, "consensus", "status", target, "--json", *flags)))


def test_vote_status_result_verify(run_cli, home, tmp_path):
    target = ok(run_cli("--home", home, "diary", "add", "proposal: meet on Fridays")).strip()
    first = ok(run_cli("--home", home, "consensus", "vote", target, "--value", "-1")).strip()
    mine = ok(run_cli("--home", home, "consensus", "vote", target, "--value", "1",
                      "--argument", "works for everyone")).strip()
    assert CONTAINER_DID.fullmatch(first) and CONTAINER_DID.fullmatch(mine)
    revised = load(home, mine)
    assert revised.payload["vote_value"] == 1 and revised.payload["vote_type"] == "approval"
    assert revised.payload["arguments"] == [{"reason": "works for everyone"}]
    assert revised.related == {"in_reply_to": [target], "previous_version": [first]}
    assert revised.timestamp_ms > load(home, first).timestamp_ms  # a revision always counts over the vote

    alone = status(run_cli, home, target)
    assert [v["vote"] for v in alone["votes"]] == [mine] and alone["state"] == "pending"
    assert alone["excluded"] == [{"vote": first, "voter": revised.sender_did, "reason": "replaced by a newer vote"}]

    t = now_ms() - 1000
    store(home, make_vote(PEERS[0], target, 1, now_ms=t), make_vote(PEERS[1], target, -1, now_ms=t),
          make_vote(PEERS[2], target, 1, now_ms=t, decision="ethical"))
    general = status(run_cli, home, target)
    assert (general["state"], general["voters"]) == ("approved", 3) and abs(general["score"] - 1 / 3) < 1e-4
    ethical = status(run_cli, home, target, "--type", "ethical", "--min-voters", "1", "--min-trust", "0.5")
    assert (ethical["state"], [v["voter"] for v in ethical["votes"]]) == ("approved", [PEERS[2].did])
    text = ok(run_cli("--home", home, "consensus", "status", target))
    assert "state:    approved" in text and PEERS[0].did in text

    result = ok(run_cli("--home", home, "consensus", "result", target)).strip()
    assert CONTAINER_DID.fullmatch(result)
    stored = load(home, result)
    assert stored.cls == "consensus_result" and stored.payload["state"] == "approved"
    assert sorted(stored.related["depends_on"]) == sorted(v["vote"] for v in general["votes"])
    out = ok(run_cli("--home", home, "consensus", "verify", result)).splitlines()
    assert out[0].startswith(f"ok {result}") and "approved" in out[0]
    assert "same result" in out[1]

    # from a file, too; and a newer vote this node holds is reported, without failing the result
    path = tmp_path / "result.cbor"
    ok(run_cli("--home", home, "container", "export", result, path))
    store(home, make_vote(PEERS[0], target, -1, now_ms=stored.timestamp_ms - 1),  # unseen by the result
          make_vote(PEERS[2], target, -1, now_ms=now_ms()))  # cast after it
    out = ok(run_cli("--home", home, "consensus", "verify", path)).splitlines()
    assert out[0].startswith(f"ok {result}")
    assert "view at that time: rejected" in out[1] and "1 vote(s) it holds are not listed" in out[1]
    assert "1 listed vote(s) it would not count" in out[1] and "1 vote(s) were cast since" in out[1]


def test_verify_refuses_tampered_and_forged_results(run_cli, home, tmp_path):
    target = ok(run_cli("--home", home, "concept", "add", "fridays")).strip()
    t = now_ms() - 1000
    votes = [make_vote(k, target, 1, now_ms=t) for k in PEERS]
    store(home, *votes)
    result = ok(run_cli("--home", home, "consensus", "result", target)).strip()
    path = tmp_path / "result.cbor"
    ok(run_cli("--home", home, "container", "export", result, path))

    # a flipped byte: the container itself no longer verifies
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x01
    tampered = tmp_path / "tampered.cbor"
    tampered.write_bytes(bytes(data))
    assert "not a valid container" in one_error_line(run_cli("--home", home, "consensus", "verify", tampered))

    # re-signed with a better score than its votes give
    honest = load(home, result)
    payload = dict(honest.payload, score=0.5)
    forged = build_container(PEERS[0], "consensus_result", payload, timestamp_ms=honest.timestamp_ms,
                             related=honest.related)
    forged_path = tmp_path / "forged.cbor"
    forged_path.write_bytes(forged.to_bytes())
    line = one_error_line(run_cli("--home", home, "consensus", "verify", forged_path))
    assert "score_mismatch" in line and forged.did in line

    # a result naming a vote this node does not hold; one stored in the store fails the same way
    stranger = make_vote(NodeKey(bytes([90]) * 32), target, -1, now_ms=t)
    p = result_payload(tally(votes + [stranger], target, trust={}, at_ms=honest.timestamp_ms, rule=Rule()))
    elsewhere = build_container(PEERS[1], "consensus_result", p, timestamp_ms=honest.timestamp_ms,
                                related={"in_reply_to": [target],
                                         "depends_on": sorted(v.did for v in votes + [stranger])})
    store(home, elsewhere)
    line = one_error_line(run_cli("--home", home, "consensus", "verify", elsewhere.did))
    assert "missing_vote" in line and stranger.did in line

    # not a result at all; nothing by that name
    assert "not a consensus_result" in one_error_line(run_cli("--home", home, "consensus", "verify", votes[0].did))
    assert "no container" in one_error_line(run_cli("--home", home, "consensus", "verify",
                                                    "did:hmp:container:uEiAnope"))
    assert "neither" in one_error_line(run_cli("--home", home, "consensus", "verify", tmp_path / "absent.cbor"))


def test_a_vote_is_on_a_container_held_here_and_takes_the_readmes_form(run_cli, home):
    """Issue 35 (3): a vote on a target this node does not hold is refused in one line and nothing
    is signed (it was stored, and counted by ``status``); ``vote TARGET +1`` (the README's form)
    works beside ``--value``."""
    nowhere = "did:hmp:container:xyz"
    for value in (["--value", "1"], ["+1"]):
        line = one_error_line(run_cli("--home", home, "consensus", "vote", nowhere, *value))
        assert f"no container {nowhere} on this node" in line, line
    assert status(run_cli, home, nowhere)["votes"] == [] and load_votes(home) == []

    target = ok(run_cli("--home", home, "note", "add", "proposal: tea at four")).strip()
    for value, stored in (("+1", 1), ("-1", -1), ("0", 0), ("1", 1)):
        vote = load(home, ok(run_cli("--home", home, "consensus", "vote", target, value)).strip())
        assert vote.payload["target_did"] == target and vote.payload["vote_value"] == stored
    assert len(status(run_cli, home, target)["votes"]) == 1  # each a revision of the one before
    assert_clean_failure(run_cli("--home", home, "consensus", "vote", target, "+1", "--value", "1"), 2)
    assert_clean_failure(run_cli("--home", home, "consensus", "vote", target), 2)
    assert "is not a vote" in run_cli("--home", home, "consensus", "vote", target, "+2").stderr


def load_votes(home) -> list:
    db = Database(db_path(home), create=False)
    try:
        return db.conn.execute("SELECT did FROM containers WHERE class = 'vote'").fetchall()
    finally:
        db.close()


def test_bad_votes_and_rules_are_usage_or_runtime_errors(run_cli, home):
    target = ok(run_cli("--home", home, "concept", "add", "x")).strip()
    assert_clean_failure(run_cli("--home", home, "consensus", "vote", target, "--value", "2"), 2)
    assert_clean_failure(run_cli("--home", home, "consensus", "vote", target, "--value", "1", "--type", "royal"), 2)
    assert "DID" in one_error_line(run_cli("--home", home, "consensus", "vote", "not-a-did", "--value", "1"))
    assert "min_voters" in one_error_line(run_cli("--home", home, "consensus", "status", target,
                                                  "--min-voters", "0"))
    assert "half-life" in one_error_line(run_cli("--home", home, "consensus", "result", target,
                                                 "--half-life-days", "-1"))


def test_verify_works_without_a_home_from_files(run_cli, tmp_path):
    """A result and its votes as files are enough: anyone can check one, no node needed."""
    target = build_container(PEERS[0], "diary_entry", {"content": "meet on Fridays"},
                             timestamp_ms=now_ms() - 5000).did
    t = now_ms() - 1000
    votes = [make_vote(k, target, 1, now_ms=t) for k in PEERS]
    result = build_result(PEERS[1], tally(votes, target, trust={}, at_ms=t + 10, rule=Rule()))
    files = []
    for i, c in enumerate([result, *votes]):
        files.append(tmp_path / f"c{i}.cbor")
        files[-1].write_bytes(c.to_bytes())
    nowhere = tmp_path / "no-home"
    flags = [x for f in files[1:] for x in ("--vote", str(f))]
    out = ok(run_cli("--home", nowhere, "consensus", "verify", files[0], *flags)).splitlines()
    assert out == [out[0]] and out[0].startswith(f"ok {result.did}") and "approved" in out[0]
    line = one_error_line(run_cli("--home", nowhere, "consensus", "verify", files[0], *flags[:2]))
    assert "missing_vote" in line and "--vote" in line  # two of the three votes are not at hand
    assert not nowhere.exists()  # nothing was created for it


def test_status_and_result_refuse_a_target_that_is_not_a_did(run_cli, home):
    for cmd in ("status", "result"):
        line = one_error_line(run_cli("--home", home, "consensus", cmd, "xyz"))
        assert "'xyz' is not a DID" in line, line


def test_decisions_are_newest_first_with_the_same_fields_for_provisional_ones(run_cli, home):
    """Committed heights 0 and 1 (1 a block of two values, after an emergency it confirmed), and a
    provisional emergency_consensus at height 2: listed height 2, then 1 (index 1, 0), then 0,
    each value with its height, index, round and emergency."""
    from meshnode.domain.consensus.blocks import encode_block
    from meshnode.store import decisions

    db = Database(db_path(home), create=False)
    try:
        decisions.save_decision(db, "e0-c", 0, [b"first"], 0, [], 1000)
        decisions.save_emergency(db, "e0-c", 1, encode_block([b"second", b"third"]), 2000)
        decisions.save_decision(db, "e0-c", 1, [b"second", b"third"], 3, [], 3000)
        decisions.revisit(db, "e0-c", 1, True)
        decisions.save_emergency(db, "e0-c", 2, encode_block([b"alone"]), 4000)
    finally:
        db.close()
    rows = json.loads(ok(run_cli("--home", home, "consensus", "decisions", "--json")))
    assert [(r["height"], r["index"], r["status"], r["round"]) for r in rows] == \
        [(2, 0, "emergency_consensus", None), (1, 1, "committed", 3), (1, 0, "committed", 3), (0, 0, "committed", 0)]
    assert [r["value"] for r in rows] == ["alone", "third", "second", "first"]
    assert [r["emergency"] for r in rows] == [{"value": "alone", "revisited": None},
                                              {"value": "second | third", "revisited": "confirmed"},
                                              {"value": "second | third", "revisited": "confirmed"}, None]
    text = ok(run_cli("--home", home, "consensus", "decisions")).splitlines()
    assert ["PROVISIONAL" in text[0], "third" in text[1], "second" in text[2], "first" in text[3]] == [True] * 4, text
    assert len(json.loads(ok(run_cli("--home", home, "consensus", "decisions", "--json", "--limit", "1")))) == 1
