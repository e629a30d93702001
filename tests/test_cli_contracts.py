"""The command line's output contracts (issue 12, items 20-28): a closed pipe ends quietly, config errors are one line, listings show who wrote what with
a short id that other commands accept, references to nothing are refused, empty results
look alike, and every subcommand explains itself."""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_cli_in_process, run_into_closed_pipe
from clienv import cli_env
from meshnode.faces.cli import build_parser
from test_cli import CONTAINER_DID, assert_clean_failure, one_error_line


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def short(did: str) -> str:
    """The short id a listing shows for a container DID (ten characters after ``uEi``)."""
    return did.removeprefix("did:hmp:container:uEi")[:10]


# --- 20: a closed pipe ------------------------------------------------------------------------


def run_process_into_closed_pipe(fake_user_home, *args, read_lines: int = 0) -> subprocess.CompletedProcess:
    """Run the CLI as a process with stdout into a pipe whose reader reads ``read_lines`` lines and
    leaves (0: it has gone before the CLI writes anything, as `... | head -0` or a reader that crashed).
    A process shows what in-process runs cannot: the interpreter's own flush of stdout at exit."""
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "r", encoding="utf-8")
    if read_lines == 0:
        reader.close()
    proc = subprocess.Popen([sys.executable, "-m", "meshnode", *map(str, args)], stdout=write_fd,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=cli_env(fake_user_home), text=True)
    os.close(write_fd)
    if read_lines:
        for _ in range(read_lines):
            assert reader.readline()
        reader.close()
    _, stderr = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, "", stderr)


def write_notes(home: Path, count: int, size: int) -> list[str]:
    """``count`` notes of ``size`` characters written straight into the home's store (fast)."""
    from meshnode.base.config import load_config
    from meshnode.base.container import now_ms
    from meshnode.store.home import open_identity
    from meshnode.domain.notes import make_note
    from meshnode.store import Database

    config = load_config(home, environ={})
    key = open_identity(config)
    db = Database(config.db_path, create=False)
    try:
        dids = []
        for i in range(count):
            note = make_note(key, f"note {i} " + "x" * size, now_ms=now_ms() + i, topic="bulk")
            db.put_container(note, received_at_ms=now_ms(), local={"tags": ["bulk", f"n{i}"]})
            dids.append(note.did)
        return dids
    finally:
        db.close()


def test_a_closed_pipe_ends_quietly(home, run_cli, fake_user_home, tmp_path):
    """In-process, stdout into a real pipe, then closed as the interpreter closes it at exit."""
    dids = write_notes(home, 40, 3000)  # --json is ~130 KB: more than a pipe holds
    exported = tmp_path / "note.cbor"
    ok(run_cli("--home", home, "container", "export", dids[0], exported))
    commands = [("status",), ("status", "--json"), ("note", "list"), ("note", "list", "--json", "--limit", "100"),
                ("container", "show", exported), ("consensus", "status", dids[0]), ("diary", "list", "--json"),
                ("note", "add", "--help"), ("mind",), ("mind", "held", "--json"), ("ethics", "list", "--json")]
    for command in commands:
        for read_lines in (0, 1):
            result = run_into_closed_pipe(["--home", home, *command], fake_user_home, read_lines=read_lines)
            if read_lines and result.returncode == 0:
                continue  # the whole output fitted in the pipe before the reader left: nothing to see
            assert result.returncode in (0, 141), (command, read_lines, result.returncode, result.stderr)
            assert result.stderr == "", (command, read_lines, result.stderr)
    # the common case: `meshnode note list --json | head -1` on an output larger than the pipe
    big = run_into_closed_pipe(["--home", home, "note", "list", "--json", "--limit", "100"], fake_user_home,
                               read_lines=1)
    assert (big.returncode, big.stderr) == (141, "")


def test_the_in_process_pipe_shows_an_unhandled_closed_pipe(home, fake_user_home, monkeypatch):
    """The check above can fail: with main's handling of a closed pipe gone, the interpreter's
    exit (the flush after main) meets the closed pipe."""
    from meshnode.faces import cli

    monkeypatch.setattr(cli, "_reader_left", lambda: 0)
    result = run_into_closed_pipe(["--home", home, "status"], fake_user_home)
    assert result.returncode == 120 and "BrokenPipeError" in result.stderr


def test_a_closed_pipe_ends_the_process_quietly(home, fake_user_home):
    """The same as processes: the reader gone before the first line, and `| head -1` on an output
    larger than the pipe (the interpreter's exit adds nothing to stderr, the code is SIGPIPE's)."""
    write_notes(home, 40, 3000)
    gone = run_process_into_closed_pipe(fake_user_home, "--home", home, "status")
    assert (gone.returncode, gone.stderr) == (141, "")
    big = run_process_into_closed_pipe(fake_user_home, "--home", home, "note", "list", "--json", "--limit", "100",
                                       read_lines=1)
    assert (big.returncode, big.stderr) == (141, "")


# --- 21, 22: addresses and DIDs in the configuration -------------------------------------------


def test_a_bad_listen_address_is_one_line_naming_where_it_came_from(home, run_cli):
    line = one_error_line(run_cli("--home", home, "run", env={"MESHNODE_NET_LISTEN": "/ip4/1.2.3/tcp/1"}))
    assert line == ("meshnode: $MESHNODE_NET_LISTEN: net.listen item 1 '/ip4/1.2.3/tcp/1':"
                    " base address '1.2.3' is not IPv4")
    config = home / "config.toml"
    config.write_text(config.read_text().replace('committee = []', 'committee = ["did:key:zzz"]'))
    line = one_error_line(run_cli("--home", home, "run"))
    assert line.startswith(f"meshnode: {config}: consensus.committee item 1 'did:key:zzz': ")


def test_list_settings_in_the_environment_take_a_toml_array(home, run_cli):
    env = {"MESHNODE_NET_INTERESTS": '["chemistry", "bees"]'}
    ok(run_cli("--home", home, "status", env=env))
    assert_clean_failure(run_cli("--home", home, "status", env={"MESHNODE_NET_INTERESTS": '["chemistry", '}))


# --- 24, 25, 27: short ids, authors, references, uniform listings --------------------------------


def test_note_list_shows_short_id_author_and_audience_and_note_read_takes_the_short_id(home, run_cli):
    did = ok(run_cli("--home", home, "note", "add", "lunch at noon", "--audience", "public", "--tags", "a,b")).strip()
    line = ok(run_cli("--home", home, "note", "list")).splitlines()[0]
    # this node's own note says who asked for it (store.provenance): the person, at the CLI
    assert re.fullmatch(rf"{short(did)}\* \S+  the person \(cli\) -> public  lunch at noon", line), line
    note = json.loads(ok(run_cli("--home", home, "note", "read", short(did), "--json")))
    assert note["container_did"] == did
    row = json.loads(ok(run_cli("--home", home, "note", "list", "--json")))[0]
    assert row["tags"] == ["a", "b"] and row["author_name"] == "test" and row["author_did"].startswith("did:key:")
    assert (row["asked_kind"], row["asked_via"], row["source"]) == ("person", "cli", "cli")
    assert row["read"] is True  # read just now
    assert not ok(run_cli("--home", home, "note", "list")).splitlines()[0].startswith(f"{short(did)}*")
    assert ok(run_cli("--home", home, "note", "tag", short(did)[:6], "later")).strip() == "a, b, later"
    unknown = one_error_line(run_cli("--home", home, "note", "read", "zzzzzzzzzz"))
    assert "'zzzzzzzzzz' names no note" in unknown
    too_short = one_error_line(run_cli("--home", home, "note", "read", "abc"))
    assert "short id" in too_short


def test_references_to_nothing_are_refused_unless_allowed(home, run_cli):
    note = ok(run_cli("--home", home, "note", "add", "a note")).strip()
    first = ok(run_cli("--home", home, "diary", "add", "first", "--topic", "mesh")).strip()
    second = ok(run_cli("--home", home, "diary", "add", "second", "--replaces", short(first))).strip()
    nowhere = first[:-4] + "AAAA"
    line = one_error_line(run_cli("--home", home, "diary", "add", "third", "--replaces", nowhere))
    assert line == (f"meshnode: --replaces {nowhere}: no such container on this node"
                    " (--allow-dangling refers to it anyway)")
    line = one_error_line(run_cli("--home", home, "diary", "add", "third", "--replaces", "xyz"))
    assert line.startswith("meshnode: --replaces: 'xyz' names no diary entry") and "related" not in line
    assert "is a note, not a diary entry" in one_error_line(
        run_cli("--home", home, "diary", "add", "third", "--replaces", note))
    assert CONTAINER_DID.fullmatch(ok(run_cli("--home", home, "diary", "add", "third", "--replaces", nowhere,
                                              "--allow-dangling")).strip())
    rows = json.loads(ok(run_cli("--home", home, "diary", "list", "--json")))
    assert second in [r["container_did"] for r in rows] and first not in [r["container_did"] for r in rows]
    assert next(r for r in rows if r["container_did"] == second)["tags"] == []
    cat = ok(run_cli("--home", home, "concept", "add", "cat", "--tag", "animals")).strip()
    line = one_error_line(run_cli("--home", home, "link", "add", cat, "is-a", nowhere))
    assert line.startswith(f"meshnode: TARGET {nowhere}: no such container")
    assert "is a note, not a concept" in one_error_line(run_cli("--home", home, "link", "add", note, "is-a", cat))
    animal = ok(run_cli("--home", home, "concept", "add", "animal")).strip()
    ok(run_cli("--home", home, "link", "add", short(cat), "is-a", short(animal)))
    assert "cat --is-a--> animal" in ok(run_cli("--home", home, "link", "list"))
    assert json.loads(ok(run_cli("--home", home, "concept", "list", "--json")))[-1]["tags"] == ["animals"]


def test_edits_and_reputation_set_take_short_ids_and_names(home, run_cli):
    """The commands that change or withdraw knowledge and notes, and `reputation set`, take what
    a listing shows (a short id, a peer's name) like every other command that takes a DID."""
    from meshnode.base.config import load_config
    from meshnode.base.identity import NodeKey
    from meshnode.base.identity.did import did_to_peer_id
    from meshnode.store import Database
    from meshnode.store.peers import upsert_peer

    cat = ok(run_cli("--home", home, "concept", "add", "cat")).strip()
    animal = ok(run_cli("--home", home, "concept", "add", "animal")).strip()
    pet = ok(run_cli("--home", home, "concept", "add", "pet")).strip()
    v2 = ok(run_cli("--home", home, "concept", "update", short(cat), "--description", "feline")).strip()
    link = ok(run_cli("--home", home, "link", "add", short(v2), "is-a", short(animal))).strip()
    ok(run_cli("--home", home, "link", "update", short(link), "--target", short(pet)))
    assert "cat --is-a--> pet" in ok(run_cli("--home", home, "link", "list"))
    nowhere = cat[:-4] + "AAAA"
    line = one_error_line(run_cli("--home", home, "link", "update", short(link), "--target", nowhere))
    assert line.startswith(f"meshnode: --target {nowhere}: no such container"), line
    assert "names no link" in one_error_line(run_cli("--home", home, "link", "delete", "zzzzzzzzzz"))
    assert ok(run_cli("--home", home, "concept", "delete", short(v2))).startswith(f"retracted {cat} with ")
    entry = ok(run_cli("--home", home, "diary", "add", "a passing thought")).strip()
    ok(run_cli("--home", home, "diary", "delete", short(entry)))
    assert json.loads(ok(run_cli("--home", home, "diary", "list", "--json"))) == []
    note = ok(run_cli("--home", home, "note", "add", "meet at 8")).strip()
    newer = ok(run_cli("--home", home, "note", "update", short(note), "meet at 9")).strip()
    assert ok(run_cli("--home", home, "note", "delete", short(newer))).strip() == f"hidden: {newer}"

    peer = NodeKey.generate()
    db = Database(load_config(home, environ={}).db_path, create=False)
    try:
        upsert_peer(db, peer.did, peer_id=did_to_peer_id(peer.did), now_ms=1_700_000_000_000, source="exchange",
                    name="bob")
    finally:
        db.close()
    assert ok(run_cli("--home", home, "reputation", "set", "bob", "0.7")).strip() == f"trust in {peer.did} set to 0.700"
    short_agent = "key:" + peer.did.removeprefix("did:key:z6Mk")[:8]
    out = ok(run_cli("--home", home, "reputation", "set", short_agent, "0.6"))
    assert out.strip() == f"trust in {peer.did} set to 0.600"
    assert "names no agent" in one_error_line(run_cli("--home", home, "reputation", "set", "nobody", "0.5"))
    line = one_error_line(run_cli("--home", home, "reputation", "set", "did:key:bad", "0.5"))  # was stored
    assert line == "meshnode: 'did:key:bad' is not an agent's DID: not an Ed25519 did:key (must start with 'did:key:z')"


def test_votes_take_short_ids(home, run_cli):
    """consensus vote|status|result|verify take the short id a listing shows; a target that is
    neither a DID nor such an id is refused in one line (a vote may be on any DID, so a whole DID
    passes to the tally's own check)."""
    note = ok(run_cli("--home", home, "note", "add", "a proposal")).strip()
    ok(run_cli("--home", home, "consensus", "vote", short(note), "--value", "1"))
    assert json.loads(ok(run_cli("--home", home, "consensus", "status", short(note), "--json")))["target_did"] == note
    result = ok(run_cli("--home", home, "consensus", "result", short(note))).strip()
    assert ok(run_cli("--home", home, "consensus", "verify", short(result))).startswith(f"ok {result}: ")
    assert "'xyz' is not a DID" in one_error_line(run_cli("--home", home, "consensus", "status", "xyz"))
    assert "names no container" in one_error_line(run_cli("--home", home, "consensus", "status", "zzzzzzzzzz"))


def test_diary_list_shows_topics(home, run_cli):
    did = ok(run_cli("--home", home, "diary", "add", "it held", "--topic", "mesh", "--topic", "ops")).strip()
    row = json.loads(ok(run_cli("--home", home, "diary", "list", "--json")))[0]
    assert row["tags"] == ["mesh", "ops"]  # a list, not JSON text inside JSON
    lines = ok(run_cli("--home", home, "diary", "list")).splitlines()
    assert lines == [f"{short(did)}  {row['timestamp'][:19]}  (mesh, ops) it held"]


def run_on_terminal(fake_user_home, *args, code: int = 0) -> str:
    """The CLI's stdout when it is a terminal (a pseudo-terminal here), run in-process."""
    master, slave = pty.openpty()
    out = open(slave, "w", encoding="utf-8")
    result = run_cli_in_process(args, fake_user_home, stdout=out)
    out.close()
    assert result.returncode == code, result.stderr
    return _read_terminal(master)


def _read_terminal(master: int) -> str:
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return out.decode().replace("\r\n", "\n")


@pytest.mark.parametrize("command", [("note", "list"), ("diary", "list"), ("concept", "list"), ("link", "list"),
                                     ("peers",), ("friend", "list"), ("reputation", "list"), ("mind", "held"),
                                     ("ethics", "list")])
def test_empty_results_look_alike(home, run_cli, fake_user_home, command):
    code = 3 if command == ("peers",) else 0  # peers with the node stopped: as last known, exit 3
    for args, shown in (((), ""), (("--json",), "[]\n")):  # a pipe: no lines at all
        result = run_cli("--home", home, *command, *args)
        assert (result.returncode, result.stdout) == (code, shown), result.stderr
    assert run_on_terminal(fake_user_home, "--home", home, *command, code=code) == "(none)\n"


def test_a_process_on_a_terminal_says_none(home, fake_user_home):
    """The process's own stdout on a terminal (the in-process runs above pass a terminal stream)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "meshnode", "--home", str(home), "note", "list"], stdout=slave,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=cli_env(fake_user_home))
    os.close(slave)
    text = _read_terminal(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    proc.stderr.close()
    assert text == "(none)\n"


# --- 28: every subcommand explains itself -------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from subcommands(sub, (*path, name))


def test_every_subcommand_and_argument_has_help():
    missing = []
    for path, parser, summary in subcommands(build_parser()):
        if not summary:
            missing.append(f"{' '.join(path)}: no one-line help")
        if not parser.description:
            missing.append(f"{' '.join(path)}: no description")
        for action in parser._actions:
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction) and not action.help:
                missing.append(f"{' '.join(path)}: argument {action.metavar or action.dest} has no help")
    assert not missing, "\n".join(missing)
    assert len(list(subcommands(build_parser()))) > 40  # the walk found the tree


def test_subcommand_help_shows_its_description_and_example(run_cli):
    out = ok(run_cli("link", "add", "--help"))
    assert "Relate a concept to others" in out and "example: meshnode link add" in out
    assert "SOURCE" in out and "the concept's container DID or short id" in out


def test_bad_fields_are_named_in_words_not_field_paths(home, run_cli):
    cat = ok(run_cli("--home", home, "concept", "add", "cat")).strip()
    for args, words in ((("link", "add", cat, "r" * 65, cat), "the relation is 1 to 64 characters"),
                        (("link", "add", cat, "is-a", cat, "--tag", ""), "each of the tags is 1 to 64 characters"),
                        (("diary", "add", "x", "--topic", " "), "each of the topics is 1 to 64 characters"),
                        (("concept", "add", "dog", "--alias", ""), "each of the aliases is 1 to 256 characters")):
        line = one_error_line(run_cli("--home", home, *args))
        assert words in line and "payload" not in line and "edges" not in line, line
