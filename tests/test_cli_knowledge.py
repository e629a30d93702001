"""``note read|tag``, ``diary``, ``concept`` and ``link`` on the command line (no node running:
they work on the database directly; with a node, test_mesh_cogsync runs them through it)."""

from __future__ import annotations

import json
import re

from test_cli import CONTAINER_DID, assert_clean_failure


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def test_notes_can_be_read_and_tagged_locally(run_cli, home):
    did = ok(run_cli("--home", home, "note", "add", "lunch at noon #food @bob", "--topic", "plans")).strip()
    note = json.loads(ok(run_cli("--home", home, "note", "read", did, "--json")))
    assert note["text"] == "lunch at noon #food @bob" and note["hashtags"] == ["food"]
    assert note["mentions"] == ["bob"] and note["read"] == 0  # the row as it was before this read
    assert json.loads(ok(run_cli("--home", home, "note", "read", did, "--json")))["read"] == 1
    assert ok(run_cli("--home", home, "note", "tag", did, "later", "errand")).strip() == "errand, later"
    assert ok(run_cli("--home", home, "note", "tag", did, "--remove", "later")).strip() == "errand"
    missing = run_cli("--home", home, "note", "read", "did:hmp:container:uEiAnope")
    assert_clean_failure(missing)
    assert "no note" in missing.stderr


def test_a_friends_note_cannot_forward_more_than_two_hops(run_cli, home):
    result = run_cli("--home", home, "note", "add", "x", "--audience", "friends", "--forward", "3")
    assert_clean_failure(result, 2)


def test_diary_versions_concepts_and_links(run_cli, home):
    first = ok(run_cli("--home", home, "diary", "add", "first draft", "--topic", "mesh")).strip()
    second = ok(run_cli("--home", home, "diary", "add", "second draft", "--replaces", first)).strip()
    assert CONTAINER_DID.fullmatch(first) and CONTAINER_DID.fullmatch(second)
    rows = json.loads(ok(run_cli("--home", home, "diary", "list", "--json")))
    assert [(r["lineage"], r["container_did"], r["text"]) for r in rows] == [(first, second, "second draft")]

    cat = ok(run_cli("--home", home, "concept", "add", "cat", "--alias", "felis", "--tag", "animals")).strip()
    animal = ok(run_cli("--home", home, "concept", "add", "animal")).strip()
    ok(run_cli("--home", home, "link", "add", cat, "is-a", animal, "--inverse", "has-kind"))
    concepts = json.loads(ok(run_cli("--home", home, "concept", "list", "--json")))
    assert sorted(c["name"] for c in concepts) == ["animal", "cat"]
    assert next(c for c in concepts if c["name"] == "cat")["aliases"] == ["felis"]
    out = ok(run_cli("--home", home, "link", "list"))
    assert re.search(r"cat --is-a--> animal", out)
    bad = run_cli("--home", home, "link", "add", "not-a-did", "is-a", animal)
    assert_clean_failure(bad)
    assert "SOURCE: 'not-a-did' names no concept" in bad.stderr


def test_knowledge_hop_limit_on_the_command_line(run_cli, home, tmp_path):
    """``--forward N`` on diary/concept/link add signs payload.forward; 2 is refused (a holder
    can tell only whether its copy came straight from the author); no flag: no limit."""
    import cbor2

    def payload(did):
        out = tmp_path / "c.cbor"
        ok(run_cli("--home", home, "container", "export", did, str(out)))
        return cbor2.loads(out.read_bytes())["hmp_container"]["payload"]

    entry = ok(run_cli("--home", home, "diary", "add", "for my friends", "--forward", "0")).strip()
    concept = ok(run_cli("--home", home, "concept", "add", "mesh", "--forward", "1")).strip()
    link = ok(run_cli("--home", home, "link", "add", concept, "is-a", concept, "--forward", "1")).strip()
    free = ok(run_cli("--home", home, "diary", "add", "for anyone's friends")).strip()
    assert [payload(d).get("forward") for d in (entry, concept, link, free)] == [0, 1, 1, None]
    assert_clean_failure(run_cli("--home", home, "diary", "add", "x", "--forward", "2"), 2)
