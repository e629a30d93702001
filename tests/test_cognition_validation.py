"""Parsing validators' verdicts and aggregating them."""

from __future__ import annotations

from meshnode.engines.cognition.validation import Verdict, parse


def test_verdicts_are_a_rating_and_a_short_comment():
    assert parse("+2 -- sound plan, one unchecked claim") == (2, "sound plan, one unchecked claim")
    assert parse("  -3 --   harmful\nmore text ignored") == (-3, "harmful")
    assert parse("0 -- " + "x" * 300)[1] == "x" * 100
    for bad in ("", "great answer", "+5 -- too high", "2 - one dash", "-- no rating"):
        assert parse(bad) is None


def test_commands_pass_at_plus_one_or_without_validators():
    assert Verdict(auto_pass=True, rating=None).passes
    assert Verdict(auto_pass=False, rating=1.0).passes
    assert not Verdict(auto_pass=False, rating=0.99).passes
    assert not Verdict(auto_pass=False, rating=None).passes  # validators registered, none answered
    v = Verdict(False, 0.5, [{"validator": "a", "rating": 1, "trust": 1, "comment": ""},
                             {"validator": "b", "rating": 1, "trust": 1, "comment": ""},
                             {"validator": "c", "rating": 0, "trust": 1, "comment": ""}])
    assert v.distribution == {"1": 2, "0": 1}


def test_metrics_show_coverage_agreement_and_a_validator_drifting():
    import json

    from meshnode.engines.cognition.validation import metrics

    rows = []
    for i in range(40):  # "b" agrees for 20 answers, then leans +2 above the aggregate
        lean_b = 0 if i < 20 else 2
        said = [{"validator": "a", "rating": 1, "trust": 1, "ms": 10}, {"validator": "b", "rating": 1 + lean_b,
                                                                         "trust": 1, "ms": 30}]
        rows.append((0, json.dumps(said), 1.0))
    rows.append((1, "[]", None))  # an auto_pass answer: not judged
    m = metrics(rows)
    assert m["coverage"] == round(40 / 41, 3)
    assert m["drift"] == {"a": 0.0, "b": 2.0}
    assert m["response_ms"] == {"a": 10, "b": 30} and 0 < m["agreement"] < 1


def _panel(ratings: dict[str, int], n: int) -> list[tuple]:
    """``n`` stored answers where each validator gave the same rating, weighted equally."""
    import json

    from meshnode.domain.reputation.weights import validator_rating

    aggregate = validator_rating((r, 1.0) for r in ratings.values())
    said = [{"validator": name, "rating": r, "trust": 1.0} for name, r in ratings.items()]
    return [(0, json.dumps(said), aggregate)] * n


def test_trust_adapts_to_agreement_bounded_and_only_after_a_few_verdicts():
    from meshnode.engines.cognition.validation import ADAPT_FLOOR, ADAPT_MIN_VERDICTS, adapted_trust

    few = adapted_trust(_panel({"a": 2, "b": 2, "c": -3}, ADAPT_MIN_VERDICTS - 1))
    assert {k: v["factor"] for k, v in few.items()} == {"a": 1.0, "b": 1.0, "c": 1.0}
    assert "until 5 verdicts" in few["c"]["why"]
    enough = adapted_trust(_panel({"a": 2, "b": 2, "c": -3}, 10))
    assert enough["a"]["factor"] == enough["b"]["factor"] > enough["c"]["factor"] > ADAPT_FLOOR
    assert enough["c"]["lean"] < 0 and enough["c"]["why"].startswith("leans -3.33")
    assert adapted_trust(_panel({"a": 3, "b": 3, "c": 3}, 10))["a"]["factor"] == 1.0  # full agreement
    # the bound: a validator as far from the panel as the scale allows keeps a quarter of its trust
    lone = adapted_trust([(0, '[{"validator": "x", "rating": -3, "trust": 1}]', 3.0)] * 10)
    assert lone["x"]["factor"] == ADAPT_FLOOR
    # drift counts too: the same lean now, but it moved since the window before
    steady = _panel({"a": 1, "b": 1}, 40)
    swung = _panel({"a": 1, "b": 1}, 20) + _panel({"a": 0, "b": 2}, 20)
    assert adapted_trust(swung)["b"]["drift"] == 1.0 and adapted_trust(swung)["b"]["factor"] < \
        adapted_trust(steady)["b"]["factor"]


def test_a_validator_failing_in_a_row_is_set_aside_and_asked_again_after_the_retry_time():
    from meshnode.engines.cognition.validator_health import ValidatorHealth

    h = ValidatorHealth(failures=3, retry_ms=1000)
    assert h.record("v", False, 0, "out of form: 'hmm'") is None
    assert h.record("v", True, 1) is None  # a verdict in between: the count starts again
    assert [h.record("v", False, t, "unreachable") for t in (2, 3, 4)] == [None, None, "set_aside"]
    assert not h.usable("v", 5) and h.set_aside(5) == ["v"]
    assert h.snapshot(5)["v"] == {"failures_in_row": 3, "last_error": "unreachable", "set_aside": True,
                                  "retry_at_ms": 1004, "retry_due": False, "times_set_aside": 1}
    assert h.usable("v", 1004) and h.snapshot(1004)["v"]["retry_due"]  # time to ask it once more
    assert h.record("v", False, 1005, "unreachable") == "set_aside"  # still failing: aside again at once
    assert not h.usable("v", 1006) and h.snapshot(1006)["v"]["times_set_aside"] == 2
    assert h.record("v", True, 3000) == "back" and h.usable("v", 3000) and h.snapshot(3000) == {}
    assert h.usable("never-seen", 0)


def test_held_commands_are_decided_all_or_nothing_with_reasons(tmp_path):
    import pytest

    from meshnode.records.mind import held
    from meshnode.engines.cognition.commands import Command
    from meshnode.store import Database

    db = Database(tmp_path / "m.db")
    try:
        with db.transaction() as conn:
            ids = held.hold(conn, 1, [Command("a", "llm_memory_add", {"text": "x"}),
                                      Command("b", "note_add", {"text": "y"})], "no_verdict", "none answered", 10)
        assert held.summary(db) == {"count": 2, "by_kind": {"no_verdict": 2}, "reason": "none answered",
                                    "released_waiting": 0}
        for bad in ([], [0], ["1"], [True], list(range(1, 2000))):
            with pytest.raises(held.HeldError) as e:
                held.decide(db, bad, True, 20, "cli")
            assert e.value.code == "bad_ids"
        with pytest.raises(held.HeldError, match="no held command 99"):
            held.decide(db, [ids[0], 99], True, 20, "cli")
        assert held.summary(db)["count"] == 2  # nothing changed
        assert [r["status"] for r in held.decide(db, [ids[0]], False, 20, "cli")] == ["dropped"]
        with pytest.raises(held.HeldError, match=f"{ids[0]} is dropped"):
            held.decide(db, [ids[0]], True, 21, "cli")
        assert [r["cmd_id"] for r in held.decide(db, None, True, 22, "cli")] == ["b"]
        claimed = held.claim_released(db)
        assert [(i, c["cmd_id"], c["args"], by) for i, c, by in claimed] == [(ids[1], "b", {"text": "y"}, "cli")]
        assert held.claim_released(db) == []  # taken once
        assert held.interrupted(db) == 1  # a crash while it ran: failed, never run again
        assert held.listing(db, "failed")[0]["cmd_id"] == "b"
        with pytest.raises(held.HeldError):
            held.listing(db, "everything")
    finally:
        db.close()


def test_which_decisions_needed_the_mesh():
    from meshnode.engines.cognition.isolation import needs_mesh

    assert needs_mesh("send_message", {}) == needs_mesh("consensus_propose", {}) == "acts through the mesh"
    assert needs_mesh("note_add", {"audience": "public"}) == "leaves the node (audience public)"
    assert needs_mesh("note_add", {}) is None and needs_mesh("note_add", {"audience": "private"}) is None
    assert needs_mesh("diary_add", {}) == "knowledge shared with friends"
    assert needs_mesh("write_file", {}) == needs_mesh("run_command", {}) == "acts on the host"
    assert needs_mesh("read_file", {}) is None  # reading changes nothing
    for local in ("llm_memory_add", "goal_add", "task_update", "cycle_settings", "llm_task", "note_readmark"):
        assert needs_mesh(local, {}) is None, local


async def test_every_validator_set_aside_holds_the_commands_it_never_passes_them_unvalidated():
    from meshnode.engines.cognition.validation import validate

    none_registered = await validate([], "prompt", "answer", "main")
    assert none_registered.passes and none_registered.auto_pass
    all_aside = await validate([], "prompt", "answer", "main", set_aside=["judge"])
    assert not all_aside.passes and all_aside.no_verdict
    assert "every validator is set aside after failing: judge" in all_aside.why_held()
