"""The command line loads only what a command uses (issue 31): building the parser, ``--version``,
``--help`` and ``status`` load none of the heavy stacks; every command's function is found when it
runs; the parsers' copies of choices and defaults agree with their homes. Timings live in
bench/cli.py: these tests check which modules are loaded, not how long it takes."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys

import pytest

from meshnode.faces.cli import build_parser, command_of
from meshnode.faces.cli.parsers import vocabulary
from meshnode.faces.cli.parsers.commands import Command

HEAVY = ("trio", "mcp", "a2a", "starlette", "hypercorn", "libp2p", "httpx", "nacl", "multiaddr", "pydantic",
         "jsonschema", "sqlite3")
# what `status` may load beyond the parser: the config, the key and the control client
STATUS_HEAVY = ("trio", "mcp", "a2a", "starlette", "hypercorn", "libp2p", "httpx", "pydantic", "jsonschema")


def loaded_after(code: str) -> set[str]:
    """The top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


PARSE = "from meshnode.faces.cli import build_parser\ntry:\n    build_parser().parse_args({argv!r})\nexcept SystemExit:\n    pass"


@pytest.mark.parametrize("code", [
    "import meshnode.faces.cli",
    PARSE.format(argv=["--version"]),
    PARSE.format(argv=["--help"]),
    PARSE.format(argv=["status"]),
    PARSE.format(argv=["goal", "list", "--help"]),
], ids=["import", "version", "help", "parse-status", "subcommand-help"])
def test_the_parser_loads_no_heavy_stack(code):
    assert loaded_after(code) & set(HEAVY) == set()


def test_the_status_command_loads_neither_trio_nor_the_web_mcp_a2a_stacks():
    assert loaded_after("import meshnode.faces.cli.node, meshnode.faces.cli.common, meshnode.net.control") & set(STATUS_HEAVY) == set()


# what `status` against a running node does not need: address parsing (multiaddr, netaddr), the container
# model (cbor2), the key file's encryption (PyNaCl's Argon2 and secretbox), the database, the MCP settings
STATUS_SPARED = ("multiaddr", "netaddr", "cbor2", "nacl.pwhash", "nacl.secret", "nacl.signing", "sqlite3",
                 "importlib.resources", "meshnode.base.container.model", "meshnode.base.config.mcp", *STATUS_HEAVY)
LIVE = {"counts": {"notes": 3}, "schema_version": 21, "addresses": ["/ip4/127.0.0.1/tcp/1"], "connected": 0,
        "cognition": {"mode": "idle"}}


def test_status_against_a_running_node_loads_only_the_config_the_key_and_the_control_client(tmp_path):
    """The whole command runs (config.toml with its listen address checked, the key file read, the
    answer printed); the node's answer is canned, as only this process's modules are looked at."""
    from meshnode.store.home import init_home

    home = tmp_path / "home"
    init_home(home, name="probe", passphrase=None, exist_ok=False)
    code = (f"import meshnode.net.control as control\ncontrol.call = lambda *a, **k: {LIVE!r}\n"
            f"from meshnode.faces.cli import main\nassert main(['--home', {str(home)!r}, 'status']) == 0")
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNODE_")}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "name:      probe" in result.stdout and "counts:    notes 3" in result.stdout
    loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert {m for m in loaded if m in STATUS_SPARED or m.split(".")[0] in STATUS_SPARED} == set()
    assert {"tomllib", "meshnode.base.config", "nacl.bindings", "socket"} <= loaded  # the probe did run the command


def test_the_key_files_libsodium_sizes_agree_with_pynacl():
    """keyfile spells them out so that a plain key file is read without PyNaCl's password hashing."""
    import nacl.pwhash
    import nacl.secret

    from meshnode.base.identity import keyfile

    argon2id, box = nacl.pwhash.argon2id, nacl.secret.SecretBox
    assert (keyfile.DEFAULT_OPSLIMIT, keyfile.DEFAULT_MEMLIMIT) == (argon2id.OPSLIMIT_MODERATE, argon2id.MEMLIMIT_MODERATE)
    assert (keyfile.SALT_BYTES, keyfile.BOX_KEY_BYTES) == (argon2id.SALTBYTES, box.KEY_SIZE)
    assert keyfile.SEALED_SEED_BYTES == box.NONCE_SIZE + box.MACBYTES + 32


def test_cognition_commands_do_not_load_the_mcp_sdk():
    assert loaded_after("import meshnode.engines.cognition.commands") & {"mcp", "mcp_types", "jsonschema"} == set()


def _commands(parser: argparse.ArgumentParser):
    func = parser._defaults.get("func")
    if func is not None:
        yield parser.prog, func
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _commands(sub)


def test_every_command_names_a_function_that_exists():
    found = list(_commands(build_parser()))
    assert len(found) > 100  # the walk found the tree
    for prog, func in found:
        assert isinstance(func, Command), prog
        assert callable(func.resolve()), f"{prog}: {func!r}"


def _paths(parser: argparse.ArgumentParser, path: tuple = ()):
    """Every command and command group, as the words that name it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from _paths(sub, (*path, name))


def _outcome(parser: argparse.ArgumentParser, argv: list[str]):
    """What parsing ``argv`` gives: the arguments (a command's function by its name), or the exit
    code with what was printed (help, or a usage error)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code, out.getvalue(), err.getvalue()
    return {k: repr(v) for k, v in vars(args).items()}


@pytest.mark.parametrize("argv, command", [
    (["status"], "status"), (["--home", "h", "status", "--json"], "status"), (["--home=h", "note", "list"], "note"),
    (["--log-level", "debug", "--db", "d", "--key-file", "k", "gate"], "gate"), ([], None), (["--version"], None),
    (["--help"], None), (["--ho", "h", "status"], None), (["--", "status"], None), (["--home"], None),
])
def test_the_command_word_is_found_only_when_certain(argv, command):
    assert command_of(argv) == command


def test_a_parser_built_for_one_command_fills_in_that_command_only():
    assert [prog for prog, _ in _commands(build_parser("status"))] == ["meshnode status"]
    assert [prog for prog, _ in _commands(build_parser("gate"))] == [prog for prog, _ in _commands(build_parser())
                                                                   if prog.startswith("meshnode gate ")]


def test_a_parser_built_for_the_command_parses_as_the_whole_one():
    """Each command's (and group's) help, a few commands with options before and after the command
    word, and usage errors: the same with the parser built for the command word as with the whole."""
    whole = build_parser()
    argvs = [[*path, "--help"] for path in _paths(whole)]
    argvs += [["--home", "/h", "status", "--json"], ["--home=/h", "note", "list", "--limit", "3", "--unread"],
              ["--log-level", "debug", "note", "add", "hi", "--audience", "friends"], ["status", "--home", "/x"],
              ["statuss"], ["note"], ["status", "--bogus"], ["note", "add"], ["friend", "add", "did:key:z"]]
    assert len(argvs) > 120
    for argv in argvs:
        command = command_of(argv)
        assert command in argv
        assert _outcome(build_parser(command), argv) == _outcome(whole, argv), argv


def test_a_command_named_wrong_fails_when_resolved():
    with pytest.raises(AttributeError):
        Command("meshnode.faces.cli.node", "cmd_no_such_command").resolve()


@pytest.mark.parametrize("name", sorted(vocabulary.HOMES))
def test_the_parsers_choices_agree_with_their_homes(name):
    module, expression = vocabulary.HOMES[name]
    assert getattr(vocabulary, name) == eval(expression, vars(importlib.import_module(module)))


# a node with the default configuration (A2A on): the face is built and its delivery loop runs at start,
# a2a-sdk (and grpc, pydantic... it brings) is loaded at the first request for the card or to /a2a
A2A_PROBE = """
import json, sys, tempfile, trio
from pathlib import Path
from types import SimpleNamespace
import meshnode.node.http  # what `run` imports to serve the web notebook, /mcp and A2A
from meshnode.faces.a2a.face import A2AFace
from meshnode.base.identity.keys import NodeKey
from meshnode.records.gmp import store_hooks
from meshnode.store.database import Database

store_hooks.install()
db = Database(Path(tempfile.mkdtemp()) / "db.sqlite")
async def on_db(fn, *args):
    return fn(db, *args)
services = SimpleNamespace(config=SimpleNamespace(values={"net": {"interests": [], "expertise": []}},
                           home=Path(tempfile.mkdtemp()), name="probe"), mesh=None, key=NodeKey.generate(),
                           metrics=SimpleNamespace(inc=lambda *a, **k: None), now=lambda: 0, store=db,
                           read=on_db, write=on_db)
guard = SimpleNamespace(listen_host="127.0.0.1", hosts=[], host_ok=lambda host: True)
face = A2AFace(services, None, guard)
async def notebook(scope, receive, send):
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})
app = face.wrap(notebook)
sdk = lambda: "a2a" in sys.modules
async def request(method, path, body=b""):
    sent = []
    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}
    async def send(message):
        sent.append(message)
    scope = {"type": "http", "method": method, "path": path, "scheme": "http", "client": ("127.0.0.1", 1),
             "headers": [(b"host", b"127.0.0.1:1"), (b"content-type", b"application/json")]}
    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])
async def main():
    seen = {"built": sdk()}
    await face.conversations.deliver_round()  # the approved-message delivery, as at start
    seen["delivery"] = sdk()
    seen["notebook"] = (await request("GET", "/"))[0], sdk()
    for method, path, body in STEPS:
        status, answer = await request(method, path, body)
        seen[path] = status, sdk(), json.loads(answer)
    print(json.dumps(seen))
trio.run(main)
"""
RPC = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "m-nothing"}}).encode()


def _a2a_probe(steps: list) -> dict:
    result = subprocess.run([sys.executable, "-c", f"STEPS = {steps!r}\n" + A2A_PROBE], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_a2a_sdk_loads_at_the_first_card_request_not_when_the_face_starts():
    seen = _a2a_probe([("GET", "/.well-known/agent-card.json", b"")])
    assert seen["built"] is False and seen["delivery"] is False and seen["notebook"] == [204, False]
    status, loaded, card = seen["/.well-known/agent-card.json"]
    assert status == 200 and loaded is True and card["name"] == "probe" and card["signatures"]


def test_a2a_sdk_loads_at_the_first_json_rpc_call():
    seen = _a2a_probe([("POST", "/a2a", RPC)])
    assert seen["built"] is False and seen["delivery"] is False and seen["notebook"] == [204, False]
    status, loaded, answer = seen["/a2a"]
    assert status == 200 and loaded is True and answer["error"]["code"] == -32001  # the SDK's task not found
