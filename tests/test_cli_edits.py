"""``concept update|delete``, ``link update|delete``, ``diary delete``, ``note update|delete`` on the
command line: on the database when no node runs, through the running node otherwise."""

from __future__ import annotations

import json

from test_cli import HUNG_S, RunningNode, one_error_line

from meshnode.net import control


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def test_edits_without_a_running_node(run_cli, home):
    def cli(*args):
        return ok(run_cli("--home", home, *args)).strip()

    cat = cli("concept", "add", "cat", "--description", "feline", "--tag", "animals")
    animal = cli("concept", "add", "animal")
    v2 = cli("concept", "update", cat, "--description", "a small feline")
    [row] = [r for r in json.loads(cli("concept", "list", "--json")) if r["name"] == "cat"]
    assert (row["lineage"], row["container_did"], row["description"], row["tags"]) == \
        (cat, v2, "a small feline", ["animals"])
    link = cli("link", "add", cat, "is-a", animal)
    cli("link", "update", link, "--relation", "kind-of")
    assert [r["relation_type"] for r in json.loads(cli("link", "list", "--json"))] == ["kind-of"]
    assert "at least one thing" in one_error_line(run_cli("--home", home, "concept", "update", cat))
    assert cli("concept", "delete", v2).startswith(f"retracted {cat} with ")
    assert [r["name"] for r in json.loads(cli("concept", "list", "--json"))] == ["animal"]
    cli("link", "delete", link)
    assert json.loads(cli("link", "list", "--json")) == []
    entry = cli("diary", "add", "a passing thought")
    cli("diary", "delete", entry)
    assert json.loads(cli("diary", "list", "--json")) == []
    assert "no diary entry" in one_error_line(run_cli("--home", home, "diary", "delete", entry + "x"))
    note = cli("note", "add", "meet at 8")
    cli("note", "update", note, "meet at 9")
    assert [r["text"] for r in json.loads(cli("note", "list", "--json"))] == ["meet at 9"]
    assert cli("note", "delete", note, "--restore") == f"shown again: {note}"
    assert sorted(r["text"] for r in json.loads(cli("note", "list", "--json"))) == ["meet at 8", "meet at 9"]
    assert cli("note", "delete", note) == f"hidden: {note}"
    assert [r["text"] for r in json.loads(cli("note", "list", "--json"))] == ["meet at 9"]


def test_edits_through_the_running_node(run_cli, home, fake_user_home):
    """The node runs (a process); the commands (in-process) go through its control socket."""
    quiet = {"MESHNODE_COGNITION_ENABLED": "false"}
    node = RunningNode(home, fake_user_home, env=quiet)

    def cli(*args):
        return ok(run_cli("--home", home, *args, env=quiet)).strip()

    def call(cmd):
        return control.call(home / "data" / "control.sock", cmd, None, timeout=HUNG_S)

    try:
        node.wait_for("ready", timeout=HUNG_S)
        dog = cli("concept", "add", "dog")
        v2 = cli("concept", "update", dog, "--alias", "canis")
        assert [(r["container_did"], r["aliases"]) for r in call("concepts")] == [(v2, ["canis"])]
        assert cli("concept", "delete", dog).startswith(f"retracted {dog}")
        assert call("concepts") == []
        note = cli("note", "add", "draft")
        newer = cli("note", "update", note, "final")
        assert [r["container_did"] for r in call("notes")] == [newer]
    finally:
        node.cleanup()
