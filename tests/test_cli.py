"""The ``meshnode`` command line (in-process, tests/cli_runner.py; `run` until a signal as a process).

Exit codes: 0 ok, 1 runtime error (one line on stderr, no traceback), 2 usage.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import nacl.pwhash
import pytest

from clienv import cli_env
from meshnode.base.identity.keyfile import load_key_file, write_key_file

NODE_DID = re.compile(r"did:key:z6Mk[1-9A-HJ-NP-Za-km-z]+")
PEER_ID = re.compile(r"12D3KooW[1-9A-HJ-NP-Za-km-z]+")
CONTAINER_DID = re.compile(r"did:hmp:container:[A-Za-z0-9_-]+")
MIN_OPS = nacl.pwhash.argon2id.OPSLIMIT_MIN
MIN_MEM = nacl.pwhash.argon2id.MEMLIMIT_MIN


def assert_clean_failure(result, code: int = 1) -> None:
    """A failed command: the expected exit code, and no traceback anywhere."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "Traceback" not in result.stdout


def one_error_line(result, code: int = 1) -> str:
    assert_clean_failure(result, code)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def status(run_cli, home: Path, env=None) -> dict:
    result = run_cli("--home", home, "status", "--json", env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def db_path(home: Path) -> Path:
    return home / "data" / "meshnode.db"


# --- init ---------------------------------------------------------------------


def test_init_creates_the_home(tmp_path, run_cli):
    home = tmp_path / "fresh"
    result = run_cli("--home", home, "init", "--name", "test")
    assert result.returncode == 0, result.stderr
    assert (home / "config.toml").is_file()
    assert (home / "bootstrap.txt").is_file()
    assert db_path(home).is_file()
    key = home / "keys" / "node.key"
    assert key.is_file()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "keys").stat().st_mode) == 0o700

    dids = NODE_DID.findall(result.stdout)
    peers = PEER_ID.findall(result.stdout)
    assert len(dids) == 1 and len(peers) == 1, result.stdout
    doc = json.loads(key.read_text())
    assert doc["did"] == dids[0]
    assert doc["encryption"] == "none"

    info = status(run_cli, home)
    assert info["did"] == dids[0]
    assert info["peer_id"] == peers[0]
    assert info["name"] == "test"
    # the database knows the node, but never its private key
    with sqlite3.connect(db_path(home)) as conn:
        rows = conn.execute("SELECT id, name, pubkey FROM identity").fetchall()
    assert rows == [(dids[0], "test", load_key_file(key).public_key.hex())]


def test_second_init_refused_then_exist_ok(home, run_cli):
    did = status(run_cli, home)["did"]
    key_before = (home / "keys" / "node.key").read_bytes()

    again = run_cli("--home", home, "init", "--name", "test")
    line = one_error_line(again)
    assert "already initialised" in line

    ok = run_cli("--home", home, "init", "--exist-ok")
    assert ok.returncode == 0, ok.stderr
    assert NODE_DID.findall(ok.stdout) == [did]
    assert (home / "keys" / "node.key").read_bytes() == key_before
    assert status(run_cli, home)["did"] == did


# --- status and --home / MESHNODE_HOME ----------------------------------------


def test_status_json(home, run_cli):
    info = status(run_cli, home)
    assert NODE_DID.fullmatch(info["did"])
    assert PEER_ID.fullmatch(info["peer_id"])
    assert Path(info["home"]) == home
    assert Path(info["database"]) == db_path(home)
    assert isinstance(info["schema_version"], int) and info["schema_version"] >= 1
    assert info["schema_version"] == info["schema_latest"]
    assert info["counts"]["containers"] == 0
    assert info["counts"]["notes"] == 0


def test_home_flag_positions_and_env(home, run_cli):
    before = run_cli("--home", home, "status", "--json")
    after = run_cli("status", "--json", "--home", home)
    by_env = run_cli("status", "--json", env={"MESHNODE_HOME": str(home)})
    for r in (before, after, by_env):
        assert r.returncode == 0, r.stderr
    dids = {json.loads(r.stdout)["did"] for r in (before, after, by_env)}
    homes = {json.loads(r.stdout)["home"] for r in (before, after, by_env)}
    assert len(dids) == 1
    assert homes == {str(home)}

    # subcommands of subcommands take it after their own name too
    listed = run_cli("note", "list", "--json", "--home", home)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_status_on_uninitialised_home_fails_cleanly(tmp_path, run_cli):
    result = run_cli("--home", tmp_path / "nothing-here", "status")
    line = one_error_line(result)
    assert "meshnode init" in line


# --- notes --------------------------------------------------------------------


def add_note(run_cli, home, *args) -> str:
    result = run_cli("--home", home, "note", "add", *args)
    assert result.returncode == 0, result.stderr
    dids = CONTAINER_DID.findall(result.stdout)
    assert len(dids) == 1, result.stdout
    return dids[0]


FRIEND_DID = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"


def test_note_add_and_list(home, run_cli):
    text = "text @alice #tag"
    refused = run_cli("--home", home, "note", "add", "too early", "--audience", "friends")
    assert "friend add" in one_error_line(refused)  # a friends note needs friends to go to
    assert run_cli("--home", home, "friend", "add", FRIEND_DID).returncode == 0
    assert run_cli("--home", home, "friend", "list").stdout.split() == ["key:iTBz1ymu"]  # no name: its short id
    assert run_cli("--home", home, "friend", "list", "--did").stdout.split() == [FRIEND_DID, "key:iTBz1ymu"]
    did = add_note(run_cli, home, text, "--topic", "t", "--tags", "a,b", "--audience", "friends")

    listed = run_cli("--home", home, "note", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    notes = json.loads(listed.stdout)
    assert len(notes) == 1
    assert notes[0]["container_did"] == did
    assert notes[0]["text"] == text
    assert notes[0]["topic"] == "t"
    assert notes[0]["audience"] == "friends"
    assert notes[0]["tags"] == ["a", "b"]

    with sqlite3.connect(db_path(home)) as conn:
        row = conn.execute(
            "SELECT hashtags, mentions, tags, audience, container_did, source, agent_did FROM notes").fetchall()
        stored = conn.execute("SELECT did, class FROM containers").fetchall()
    assert len(row) == 1
    hashtags, mentions, tags, audience, container_did, source, agent_did = row[0]
    assert json.loads(hashtags) == ["tag"]
    assert json.loads(mentions) == ["alice"]
    assert json.loads(tags) == ["a", "b"]
    assert audience == "friends"
    assert container_did == did
    assert source == "cli"
    assert stored == [(did, "note")]

    info = status(run_cli, home)
    assert agent_did == info["did"]
    assert info["counts"]["containers"] == 1
    assert info["counts"]["notes"] == 1


def test_empty_note_fails_cleanly(home, run_cli):
    one_error_line(run_cli("--home", home, "note", "add", "   "))
    assert status(run_cli, home)["counts"]["containers"] == 0


def test_a_note_from_a_file_or_standard_input_up_to_its_stated_limit(home, run_cli, tmp_path):
    """Issue 35 (11): a note too long for a command line is given from a file (--file) or from
    standard input (-); over a note's 64 KiB of UTF-8 it is refused in one line saying the limit,
    and nothing is stored."""
    report = tmp_path / "report.md"
    report.write_text("# weekly\n" + "é" * 32_000, encoding="utf-8")  # 64 009 bytes
    from_file = add_note(run_cli, home, "--file", str(report), "--topic", "weekly")
    from_stdin = run_cli("--home", home, "note", "add", "-", input="piped #in")
    assert from_stdin.returncode == 0, from_stdin.stderr
    notes = {n["container_did"]: n for n in json.loads(run_cli("--home", home, "note", "list", "--json").stdout)}
    assert notes[from_file]["text"] == report.read_text(encoding="utf-8") and notes[from_file]["topic"] == "weekly"
    assert notes[from_stdin.stdout.strip()]["text"] == "piped #in"

    report.write_text("é" * 32_769, encoding="utf-8")  # 65 538 bytes: 32 769 characters only
    assert "more than a note's 65536 bytes (64 KiB)" in one_error_line(
        run_cli("--home", home, "note", "add", "--file", str(report)))
    assert "more than a note's 65536 bytes" in one_error_line(
        run_cli("--home", home, "note", "add", "-", input="x" * 65_537))
    assert "65536 bytes of UTF-8" in one_error_line(run_cli("--home", home, "note", "add", "é" * 32_769))
    report.write_bytes(b"bad \xff byte")
    assert "not UTF-8 text" in one_error_line(run_cli("--home", home, "note", "add", "--file", str(report)))
    assert "no-such-file" in one_error_line(run_cli("--home", home, "note", "add", "--file", tmp_path / "no-such-file"))
    assert status(run_cli, home)["counts"]["notes"] == 2


# --- containers -----------------------------------------------------------------


@pytest.fixture
def exported(home, run_cli, tmp_path):
    """(home, container DID, exported file, note text)."""
    text = "exported note with some text"
    did = add_note(run_cli, home, text)
    out = tmp_path / "note.cbor"
    result = run_cli("--home", home, "container", "export", did, out)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 0
    return home, did, out, text


def test_container_export_verify_show(exported, run_cli):
    home, did, file, text = exported
    verified = run_cli("--home", home, "container", "verify", file)
    assert verified.returncode == 0, verified.stderr
    sender = status(run_cli, home)["did"]
    assert verified.stdout.strip() == f"ok {did} note from {sender}"

    shown = run_cli("--home", home, "container", "show", file)
    assert shown.returncode == 0, shown.stderr
    plain = json.loads(shown.stdout)
    assert plain["verified"]["container_did"] == did
    assert "unsigned_side_blocks" not in plain
    assert plain["hmp_container"]["payload"]["text"] == text
    assert text in shown.stdout


@pytest.mark.parametrize("where", ["text", "start", "middle", "end"])
def test_container_verify_flipped_bit(exported, run_cli, tmp_path, where):
    home, _did, file, text = exported
    data = bytearray(file.read_bytes())
    index = {"text": data.find(text.encode()) + 3, "start": 0, "middle": len(data) // 2,
             "end": len(data) - 1}[where]
    data[index] ^= 0x04
    bad = tmp_path / "flipped.cbor"
    bad.write_bytes(bytes(data))

    result = run_cli("--home", home, "container", "verify", bad)
    assert_clean_failure(result, 1)
    assert re.fullmatch(r"invalid \([a-z_]+\): .+", result.stdout.strip()), result.stdout
    if where == "text":
        assert result.stdout.startswith("invalid (payload_hash_mismatch)")

    shown = run_cli("--home", home, "container", "show", bad)
    assert_clean_failure(shown, 1)
    assert "invalid (" in shown.stderr


def test_container_verify_missing_file(home, run_cli, tmp_path):
    for command in ("verify", "show"):
        result = run_cli("--home", home, "container", command, tmp_path / "no-such-file.cbor")
        line = one_error_line(result)
        assert "no-such-file.cbor" in line


def test_container_export_unknown_did(home, run_cli, tmp_path):
    result = run_cli("--home", home, "container", "export", "did:hmp:container:bnothere", tmp_path / "x.cbor")
    line = one_error_line(result)
    assert "no container" in line
    assert not (tmp_path / "x.cbor").exists()


def test_container_export_to_missing_directory_fails_cleanly(home, run_cli, tmp_path):
    did = add_note(run_cli, home, "a note")
    result = run_cli("--home", home, "container", "export", did, tmp_path / "no-such-dir" / "x.cbor")
    line = one_error_line(result)
    assert "no-such-dir" in line


# --- usage errors ---------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["frobnicate"],
    [],
    ["note"],
    ["note", "add"],
    ["container", "verify"],
    ["container", "export", "did:hmp:container:bx"],
    ["note", "add", "x", "--audience", "everyone"],
    ["note", "add", "x", "--file", "notes.md"],
    ["note", "list", "--limit", "many"],
])
def test_usage_errors_exit_2(home, run_cli, args):
    result = run_cli("--home", home, *args)
    assert_clean_failure(result, 2)
    assert "usage:" in result.stderr


# --- as a process ----------------------------------------------------------------


def test_exit_codes_of_the_process(run_cli_process, tmp_path):
    """``python -m meshnode`` and the ``meshnode`` console script end the process with main's code:
    0 ok, 1 runtime error (one line, no traceback), 2 usage (the rest of the suite runs main in-process)."""
    from meshnode import __version__

    version = run_cli_process("--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"meshnode {__version__}")
    usage = run_cli_process("frobnicate")
    assert_clean_failure(usage, 2)
    assert "usage:" in usage.stderr
    script = Path(sys.executable).with_name("meshnode")
    if not script.exists():
        pytest.skip(f"no console script beside {sys.executable} (the package is not installed)")
    result = subprocess.run([str(script), "--home", str(tmp_path / "nothing-here"), "status"], capture_output=True,
                            text=True, encoding="utf-8", timeout=60, stdin=subprocess.DEVNULL,
                            env=cli_env(tmp_path))
    assert "meshnode init" in one_error_line(result)


# --- run ------------------------------------------------------------------------


class RunningNode:
    """``meshnode run`` as a subprocess, its stdout read line by line on a thread."""

    def __init__(self, home: Path, fake_user_home: Path, env: dict[str, str] | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "meshnode", "--home", str(home), "run"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", env=cli_env(fake_user_home, env),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.stderr), daemon=True),
        ]
        for t in self._threads:
            t.start()

    @staticmethod
    def _pump(stream, q) -> None:
        for line in stream:
            q.put(line)
        q.put(None)

    @staticmethod
    def _drain(stream, sink) -> None:
        for line in stream:
            sink.append(line)

    def wait_for(self, needle: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {needle!r} within {timeout} s; got {self.stdout!r} {self.stderr!r}")
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"stdout closed before {needle!r}; got {self.stdout!r} {self.stderr!r}")
            self.stdout.append(line)
            if needle in line:
                return line

    def rest_of_stdout(self, timeout: float = 5.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.stdout.append(line)
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        return self.stdout

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


HUNG_S = 30  # a node that has not stopped by then hangs (it stops within a second or so)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_run_until_signal(home, run_cli, fake_user_home, signum):
    """The node runs until the signal, then stops because of it: it says so, records the stop,
    and exits 0 (not killed by the signal, no traceback)."""
    did = status(run_cli, home)["did"]
    node = RunningNode(home, fake_user_home)
    try:
        node.wait_for("ready", timeout=HUNG_S)
        did_lines = [line for line in node.stdout if line.startswith("did:")]
        assert len(did_lines) == 1, node.stdout
        assert did_lines[0].split()[1] == did
        assert node.proc.poll() is None, "the node exited on its own"

        node.proc.send_signal(signum)
        try:
            code = node.proc.wait(timeout=HUNG_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the node did not stop within {HUNG_S} s of the signal") from None
        assert code == 0, (code, node.stderr)
        out = node.rest_of_stdout()
        assert any(line.strip() == "stopped" for line in out), out
        assert any(f"received {signal.Signals(signum).name}, stopping" in line for line in node.stderr), node.stderr
        assert not any("Traceback" in line for line in node.stderr), node.stderr
    finally:
        node.cleanup()

    # the shutdown went through the store: the heartbeat row says "stopped"
    with sqlite3.connect(db_path(home)) as conn:
        assert conn.execute("SELECT stop FROM main_process WHERE name = 'node'").fetchall() == [(1,)]


def test_run_refuses_readable_key_file(home, run_cli):
    key = home / "keys" / "node.key"
    key.chmod(0o644)
    result = run_cli("--home", home, "run", timeout=20)
    line = one_error_line(result)
    assert "chmod 600" in line
    assert "ready" not in result.stdout


# --- configuration ----------------------------------------------------------------


def test_config_file_then_environment(home, run_cli):
    (home / "config.toml").write_text('[node]\nname = "fromfile"\n', encoding="utf-8")
    assert status(run_cli, home)["name"] == "fromfile"
    assert status(run_cli, home, env={"MESHNODE_NODE_NAME": "fromenv"})["name"] == "fromenv"


@pytest.mark.parametrize("extra, needle", [
    ("\n[bogus]\nx = 1\n", "bogus"),
    ("\n[node]\nnickname = 'x'\n", "node.nickname"),
])
def test_unknown_config_rejected(home, run_cli, extra, needle):
    config = home / "config.toml"
    if "[node]" in extra:
        config.write_text(extra, encoding="utf-8")
    else:
        config.write_text(config.read_text(encoding="utf-8") + extra, encoding="utf-8")
    line = one_error_line(run_cli("--home", home, "status"))
    assert needle in line
    assert "unknown" in line


def test_badly_typed_config_rejected(home, run_cli):
    config = home / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "max_depth = 32" in text
    config.write_text(text.replace("max_depth = 32", 'max_depth = "x"'), encoding="utf-8")
    for command in (["status"], ["run"], ["note", "list"]):
        line = one_error_line(run_cli("--home", home, *command, timeout=20))
        assert "limits.max_depth" in line
        assert "int" in line


def test_badly_typed_environment_rejected(home, run_cli):
    line = one_error_line(run_cli("--home", home, "status", env={"MESHNODE_LIMITS_MAX_DEPTH": "x"}))
    assert "MESHNODE_LIMITS_MAX_DEPTH" in line


def test_unparsable_config_rejected(home, run_cli):
    (home / "config.toml").write_text("[node\nname = ", encoding="utf-8")
    line = one_error_line(run_cli("--home", home, "status"))
    assert "config.toml" in line


# --- encrypted keys -----------------------------------------------------------------


def test_init_encrypt_and_status(tmp_path, run_cli):
    """The one CLI test paying for default-strength Argon2id (init, then one unlock)."""
    home = tmp_path / "enc"
    env = {"MESHNODE_KEY_PASSPHRASE": "correct horse battery"}
    result = run_cli("--home", home, "init", "--name", "test", "--encrypt", env=env)
    assert result.returncode == 0, result.stderr
    assert "(encrypted)" in result.stdout
    did = NODE_DID.findall(result.stdout)[0]

    key = home / "keys" / "node.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    doc = json.loads(key.read_text())
    assert doc["encryption"] != "none"
    assert "seed" not in doc
    assert doc["did"] == did
    assert "ciphertext" in doc and "kdf" in doc

    assert status(run_cli, home, env=env)["did"] == did


@pytest.fixture
def encrypted_home(home) -> tuple[Path, str, str]:
    """The ``home`` fixture with its key re-written encrypted (cheap Argon2id parameters)."""
    path = home / "keys" / "node.key"
    key = load_key_file(path)
    path.unlink()
    passphrase = "a long enough passphrase"
    write_key_file(path, key, passphrase, opslimit=MIN_OPS, memlimit=MIN_MEM)
    return home, key.did, passphrase


def test_encrypted_key_passphrase_handling(encrypted_home, run_cli):
    home, did, passphrase = encrypted_home

    missing = run_cli("--home", home, "status")
    assert "MESHNODE_KEY_PASSPHRASE" in one_error_line(missing)

    wrong = run_cli("--home", home, "status", env={"MESHNODE_KEY_PASSPHRASE": "not the passphrase"})
    assert "wrong passphrase" in one_error_line(wrong)

    assert status(run_cli, home, env={"MESHNODE_KEY_PASSPHRASE": passphrase})["did"] == did

    exist_ok = run_cli("--home", home, "init", "--exist-ok", env={"MESHNODE_KEY_PASSPHRASE": passphrase})
    assert exist_ok.returncode == 0, exist_ok.stderr
    assert NODE_DID.findall(exist_ok.stdout) == [did]


def test_init_encrypt_needs_a_passphrase(tmp_path, run_cli):
    home = tmp_path / "enc"
    no_pass = run_cli("--home", home, "init", "--encrypt")
    assert "MESHNODE_KEY_PASSPHRASE" in one_error_line(no_pass)
    assert not (home / "keys" / "node.key").exists()

    weak = run_cli("--home", home, "init", "--encrypt", env={"MESHNODE_KEY_PASSPHRASE": "short"})
    assert "8 characters" in one_error_line(weak)
    assert not (home / "keys" / "node.key").exists()


def test_seed_never_leaves_the_key_file(home, run_cli):
    add_note(run_cli, home, "a note so the database holds a signed container")
    status(run_cli, home)
    seed_b64 = json.loads((home / "keys" / "node.key").read_text())["seed"]
    seed = base64.b64decode(seed_b64)
    assert len(seed) == 32
    needles = [seed, seed_b64.encode(), seed.hex().encode(), seed.hex().upper().encode(),
               base64.urlsafe_b64encode(seed).rstrip(b"=")]

    files = [home / "config.toml", home / "bootstrap.txt", *sorted((home / "data").iterdir())]
    assert db_path(home) in files
    for f in files:
        content = f.read_bytes()
        for needle in needles:
            assert needle not in content, f"the private seed appears in {f}"
    # and nothing else in the home (outside keys/) holds it either
    for dirpath, _dirs, names in os.walk(home):
        if Path(dirpath) == home / "keys":
            continue
        for name in names:
            assert seed not in (Path(dirpath) / name).read_bytes()
