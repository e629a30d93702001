"""The agent's outside tools (MCP servers, meshnode/engines/mcp_tools): configuration, connection, the
gate's risk and confirmation, and the whole path in a running cognitive cycle with a real MCP
server (tests/mcp_tool_server.py, MCPServer over stdio: trusted, and in the gate's sandbox)."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from cyclelab import answer_with, until
from gatelab import clock
from llmharness import ScriptedLLM, prompt_section
from meshnode.engines.cognition import mcp_commands
from meshnode.records.mind import registry
from meshnode.engines.cognition.commands import Command, extract
from meshnode.engines.cognition.cycle import Cycle
from meshnode.records.mind.registry import Endpoint
from meshnode.base.container import now_ms
from meshnode.base.errors import ConfigError
from meshnode.engines.gate import GateError
from meshnode.records.gate import confirm
from meshnode.engines.gate.tools import DESTRUCTIVE, MODIFY, SAFE_READ
from meshnode.base.identity.keys import NodeKey
from meshnode.base.config import mcp as settings
from meshnode.base.metrics import Metrics
from meshnode.engines.mcp_tools.calls import MAX_RESULT, McpTools, risk_of
from meshnode.engines.mcp_tools.clients import Clients, Link, ToolInfo
from test_cli import one_error_line

SERVER = str(Path(__file__).resolve().parent / "mcp_tool_server.py")


def stdio(**extra) -> dict:
    return {"command": sys.executable, "args": [SERVER], "trusted": True, **extra}


async def connected(lab, tmp_path, nursery, **tables) -> McpTools:
    """The lab's gate with outside tools from ``tables`` (server name -> its table), once all are up."""
    clients = Clients(settings.parse(tables), tmp_path)
    gate = lab["make"](mcp=lambda gate: McpTools(clients, gate, Metrics()))
    await nursery.start(clients.run)
    await until(lambda: all(link.status == "up" for link in clients.links.values()), what="the MCP servers",
                timeout=60)
    return gate.mcp


async def pending(store) -> list[dict]:
    return await store.read(confirm.listing, clock())


def tool(read_only=None, destructive=None) -> ToolInfo:
    return ToolInfo("t", "", {"type": "object"}, read_only, destructive)


@pytest.mark.parametrize("configured, read_only, destructive, expected", [
    (None, True, None, DESTRUCTIVE),  # by default every outside tool asks a person
    ("safe_read", True, None, SAFE_READ),  # lowered by config: a read-only tool runs at once
    ("safe_read", None, None, DESTRUCTIVE),  # no annotations: MCP's default destructiveHint is true
    ("safe_read", False, None, DESTRUCTIVE),
    ("safe_read", None, False, MODIFY),  # said not destructive, not read-only: never the lowest
    ("safe_read", False, False, MODIFY),
    ("safe_read", False, True, DESTRUCTIVE),  # said destructive: always asks
    ("modify", True, True, DESTRUCTIVE),
    ("destructive", True, False, DESTRUCTIVE),  # raising is always allowed
])
def test_risk_is_the_configured_level_never_below_the_tools_annotations(configured, read_only, destructive,
                                                                          expected):
    table = {"command": "x"} if configured is None else {"command": "x", "tools": {"t": configured}}
    [server] = settings.parse({"s": table})
    assert risk_of(Link(server), tool(read_only, destructive)) == expected


@pytest.mark.parametrize("table, says", [
    ({}, "mcp.servers.fs: give either command"),
    ({"command": "x", "url": "http://h/mcp"}, "mcp.servers.fs: give either command"),
    ({"command": "x", "risk": "sometimes"}, "mcp.servers.fs.risk = 'sometimes'"),
    ({"command": "x", "tools": {"wipe": "none"}}, "mcp.servers.fs.tools.wipe = 'none'"),
    ({"command": "x", "timeout_seconds": 0}, "mcp.servers.fs.timeout_seconds = 0"),
    ({"command": "x", "trusted": "yes"}, "mcp.servers.fs.trusted must be bool"),
    ({"command": "x", "args": "-v"}, "mcp.servers.fs.args must be list"),
    ({"command": "x", "comand": "y"}, "mcp.servers.fs: unknown setting 'comand'"),
    ({"url": "ftp://h"}, "mcp.servers.fs.url = 'ftp://h'"),
    ({"url": "http://h/mcp", "trusted": True}, "mcp.servers.fs.trusted: only for a stdio server"),
    ({"command": "x", "token": "t"}, "mcp.servers.fs.token: only for a url"),
    ({"command": "x", "read_only": ["relative"]}, "mcp.servers.fs.read_only: 'relative'"),
    ({"command": "x", "read_only": ["/etc/ssl"]}, "mcp.servers.fs.read_only: '/etc/ssl' is (or is inside) a system"),
    ({"command": "x", "read_only": ["/proc/1/"]}, "mcp.servers.fs.read_only: '/proc/1/' is (or is inside)"),
    ({"command": "x", "read_only": ["/tmp/"]}, "mcp.servers.fs.read_only: '/tmp/' is (or is inside)"),
    ({"command": "x", "read_only": ["/"]}, "mcp.servers.fs.read_only: '/' is (or is inside)"),
])
def test_a_bad_server_entry_is_a_readable_error_naming_the_key(table, says):
    with pytest.raises(ConfigError) as info:
        settings.parse({"fs": table})
    assert says in info.value.reason


def test_read_only_never_shares_the_nodes_home(tmp_path, monkeypatch):
    home = tmp_path / "srv" / "node"
    (home / "keys").mkdir(parents=True)
    (tmp_path / "venv").mkdir()
    for shared in (home, home / "keys", tmp_path / "srv", tmp_path / "srv" / "node" / "keys" / ".." / "keys"):
        with pytest.raises(ConfigError, match="would share the node's home|not an absolute folder"):
            settings.parse({"fs": {"command": "x", "read_only": [str(shared)]}}, home.parent.parent / "srv" / "node")
    (tmp_path / "link").symlink_to(home / "keys")
    with pytest.raises(ConfigError, match="would share the node's home"):
        settings.parse({"fs": {"command": "x", "read_only": [str(tmp_path / "link")]}}, home)
    [ok] = settings.parse({"fs": {"command": "x", "read_only": [str(tmp_path / "venv")]}}, home)
    assert ok.read_only == (str(tmp_path / "venv"),)


def test_a_bad_server_name_and_the_accepted_shapes():
    with pytest.raises(ConfigError, match="a server name is"):
        settings.parse({"my.fs": {"command": "x"}})
    [http, off] = settings.parse({"web": {"url": "https://tools.example/mcp", "token": "s3", "risk": "low"},
                                  "off": {"command": "x", "enabled": True, "trusted": True}})
    assert http.headers == {"Authorization": "Bearer s3"} and http.risk == SAFE_READ and not http.sandboxed
    assert off.command == ("x",) and not off.sandboxed
    assert settings.parse({"x": {"command": "y", "enabled": False}}) == []


def test_meshnode_run_says_which_mcp_key_is_wrong(home, run_cli):
    config = home / "config.toml"
    text = config.read_text(encoding="utf-8")
    assert "\n[mcp]\n[mcp.servers]\n" in text  # the default: no server, a table a person adds [mcp.servers.NAME] under
    config.write_text(text + '\n[mcp.servers.fs]\ncommand = "x"\nrisk = "sometimes"\n', encoding="utf-8")
    line = one_error_line(run_cli("--home", home, "run", timeout=60))
    assert "mcp.servers.fs.risk = 'sometimes'" in line


def test_an_outside_tools_name_as_the_command_type_is_an_mcp_call():
    read = extract('# Commands:\n{"cmd_id": "a", "type": "mcp.fs.read", "args": {"path": "x"}}\n'
                   '{"cmd_id": "b", "type": "mcp__fs__read", "args": {}}\n# End of commands\n')
    assert [(c.type, c.args) for c in read.commands] == [
        ("mcp_call", {"tool": "mcp.fs.read", "args": {"path": "x"}}), ("mcp_call", {"tool": "mcp.fs.read", "args": {}})]


async def test_calls_are_checked_run_limited_and_typed(lab, tmp_path):
    """Arguments outside the schema are refused before anyone is asked; a hanging tool is a
    timeout result and the server stays usable; a tool's own error, an unknown tool and a huge
    result are typed or cut; a tool said destructive asks even when config says low."""
    async with trio.open_nursery() as nursery:
        # 5 s, not 1: the same timeout bounds the server's start-up (an interpreter and the MCP SDK, which
        # took over 1 s on two busy cores and made every reconnect fail); the hanging call waits it out
        mcp = await connected(lab, tmp_path, nursery,
                              tt=stdio(risk="low", timeout_seconds=5, tools={"wipe": "safe_read"}))
        with pytest.raises(GateError) as info:
            await mcp.call("mcp.tt.add", {"a": 2, "b": "forty"})
        assert info.value.code == "bad_args" and "args.b" in info.value.reason and "integer" in info.value.reason
        asked = await mcp.call("mcp.tt.wipe", {"target": "disk"})
        assert asked["status"] == "needs_confirmation"  # config said safe_read; the tool says destructive
        [req] = await pending(lab["store"])
        assert (req["tool"], req["args"], req["risk"]) == ("mcp.tt.wipe", {"target": "disk"}, DESTRUCTIVE)
        hung = await mcp_commands.run(mcp.gate, Command("h1", "mcp_call", {"tool": "mcp.tt.hang", "args": {}}))
        assert (hung["status"], hung["code"]) == ("error", "mcp_timeout") and "timeout_seconds" in hung["error"]
        assert await mcp.call("mcp.tt.add", {"a": 2, "b": 40}) == {"tool": "mcp.tt.add", "result": "42"}
        with pytest.raises(GateError) as info:
            await mcp.call("mcp.tt.fail", {})
        assert info.value.code == "mcp_tool_error"
        with pytest.raises(GateError) as info:
            await mcp.call("mcp.tt.format_disk", {})
        assert info.value.code == "unknown_tool" and "add" in info.value.reason
        long = (await mcp.call("mcp.tt.big", {"n": 50_000}))["result"]
        assert len(long) < MAX_RESULT + 100 and "cut: the tool returned 50000 characters" in long
        told = len(lab["told"])
        assert (await mcp.call("mcp.tt.shout", {"text": "hi"}))["result"] == "HI!"  # modify: runs, person told
        assert len(lab["told"]) == told + 1 and "mcp.tt.shout" in lab["told"][-1]
        counted = {(c["labels"]["server"], c["labels"]["outcome"]): c["value"] for c in mcp.metrics.snapshot()
                   if c["name"] == "mcp_tool_calls"}
        assert counted == {("tt", "bad_args"): 1, ("tt", "asked"): 1, ("tt", "timeout"): 1, ("tt", "ok"): 3,
                           ("tt", "tool_error"): 1, ("tt", "unknown_tool"): 1}
        nursery.cancel_scope.cancel()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's uid 65534 needs root")


@needs_root
async def test_a_stdio_server_runs_in_the_gates_sandbox_unless_trusted(lab, tmp_path):
    seen = [sys.base_prefix, sys.prefix, str(Path(SERVER).parent)]  # what its program needs, read-only
    mask = os.umask(0o077)  # the node's own (meshnode/faces/cli/__init__.py): the folders made for them must stay walkable
    try:
        await _sandboxed(lab, tmp_path, seen)
    finally:
        os.umask(mask)


async def _sandboxed(lab, tmp_path, seen: list[str]) -> None:
    async with trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, box={"command": sys.executable, "args": [SERVER],
                                                           "read_only": seen, "risk": "low"},
                              host=stdio(risk="low"))
        boxed = (await mcp.call("mcp.box.where", {}))["result"]
        assert boxed.startswith("uid=65534 cwd=/workspace") and "home_visible=False" in boxed
        assert (await mcp.call("mcp.box.add", {"a": 1, "b": 2}))["result"] == "3"
        assert (await mcp.call("mcp.host.where", {}))["result"].startswith(f"uid={os.geteuid()} cwd=")
        assert {s["server"]: s["sandboxed"] for s in mcp.clients.status()} == {"box": True, "host": False}
        nursery.cancel_scope.cancel()


async def test_the_agent_calls_an_outside_tool_a_person_confirms_and_the_result_reaches_its_next_tick(
        lab, tmp_path):
    """In a running cycle: the tools are in context 2; the agent calls two; each waits for a person;
    the approved one runs and its result is in a later prompt's context 4; the denied one comes back
    as denied; neither ran before the answer."""
    store = lab["store"]
    calls = [{"cmd_id": "c1", "type": "mcp.tt.shout", "args": {"text": "hello mesh"}},
             {"cmd_id": "c2", "type": "mcp_call", "args": {"tool": "mcp.tt.wipe", "args": {"target": "the disk"}}}]
    llm = ScriptedLLM(tmp_path, "main", [answer_with(0, *calls)] + [answer_with(i) for i in range(1, 30)])
    try:
        await store.write(registry.add, Endpoint("main", llm.url, "scripted", timeout_s=30))
        async with trio.open_nursery() as nursery:
            mcp = await connected(lab, tmp_path, nursery, tt=stdio())
            cycle = Cycle(store, NodeKey.generate(), now_ms, pause_s=60.0, gate=mcp.gate)
            nursery.start_soon(cycle.run)
            await until(lambda: logged(store, "cmd:c2"), what="the calls' results")
            first = prompt_section(llm.prompts()[0], "Outside tools", required=True)
            assert "mcp.tt.shout [risk: destructive] Say it louder" in first and '"text":{"type":"string"}' in first
            asked = {json.loads((await logged(store, f"cmd:{c}"))[0])["result"]["status"] for c in ("c1", "c2")}
            assert asked == {"needs_confirmation"}
            shout, wipe = sorted(await pending(store), key=lambda r: r["id"])
            assert (shout["tool"], wipe["tool"]) == ("mcp.tt.shout", "mcp.tt.wipe")
            assert any("mcp.tt.shout" in t and f"confirm approve {shout['id']}" in t for t in lab["told"])
            await store.write(confirm.decide, shout["id"], True, clock(), "person")
            await store.write(confirm.decide, wipe["id"], False, clock(), "person")

            async def answered():
                cycle.wake.set()  # a person's answer does not wake the agent: the test spares the pause
                return [p for p in llm.prompts() if "HELLO MESH!" in p and "denied mcp.tt.wipe" in p]
            await until(answered, what="a prompt with the result and the denial")
            results = prompt_section((await answered())[0], "(context 4)", required=True)
            assert f"confirm:{shout['id']} [ok]" in results and "HELLO MESH!" in results
            assert f"confirm:{wipe['id']} [error]" in results and '"code": "denied"' in results
            value, status = await logged(store, f"confirm:{shout['id']}")
            assert status == "ok" and json.loads(value)["result"] == {"tool": "mcp.tt.shout", "result": "HELLO MESH!"}
            nursery.cancel_scope.cancel()
    finally:
        llm.stop()


async def logged(store, name: str) -> tuple[str, str] | None:
    return await store.read(lambda db: db.conn.execute(
        "SELECT value, status FROM process_log WHERE name = ? ORDER BY id DESC", (name,)).fetchone())


@asynccontextmanager
async def http_server():
    """tests/mcp_tool_server.py over streamable HTTP on a loopback port (token s3): yields (its url, its process)."""
    import subprocess

    server = await trio.lowlevel.open_process([sys.executable, SERVER, "http", "0", "s3"], stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL)
    try:
        printed = b""
        with trio.fail_after(60):  # the child binds port 0 and prints the port it got
            while not printed.endswith(b"\n"):
                chunk = await server.stdout.receive_some(64)
                assert chunk, "the test server ended before printing its port"
                printed += chunk
        yield f"http://127.0.0.1:{int(printed)}/mcp", server
    finally:
        server.kill()
        await server.wait()


async def test_a_server_over_streamable_http(lab, tmp_path):
    """A url instead of a command: the same tools, the same gate (its token is sent as a bearer)."""
    async with http_server() as (url, _), trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, web={"url": url, "token": "s3", "risk": "low"})
        assert await mcp.call("mcp.web.add", {"a": 40, "b": 2}) == {"tool": "mcp.web.add", "result": "42"}
        assert (await mcp.call("mcp.web.wipe", {"target": "x"}))["status"] == "needs_confirmation"
        [definition] = [t for t in mcp.openai_tools(6000) if t["function"]["name"] == "mcp__web__add"]
        assert definition["function"]["parameters"]["required"] == ["a", "b"]
        nursery.cancel_scope.cancel()


def test_a_tools_schema_never_makes_the_node_fetch_a_url(monkeypatch):
    """jsonschema's default registry fetches a remote $ref (urlopen, blocking): a server's schema
    could make the node reach anywhere. Local $refs still work."""
    import urllib.request

    from meshnode.engines.mcp_tools.calls import check_args

    fetched = []

    def urlopen(request, *args, **kwargs):
        fetched.append(getattr(request, "full_url", request))
        raise OSError("no network in this test")
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/a.json"}}}
    with pytest.raises(GateError) as info:
        check_args({"a": 1}, remote)
    assert info.value.code == "bad_schema" and fetched == []
    local = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}}
    check_args({"a": 1}, local)
    with pytest.raises(GateError, match="args.a: 'x' is not of type 'integer'"):
        check_args({"a": "x"}, local)


async def test_every_page_of_a_tool_listing_is_read():
    from types import SimpleNamespace

    from mcp import types

    from meshnode.engines.mcp_tools.clients import _list

    class Paged:
        asked: list = []

        async def list_tools(self, params=None):
            self.asked.append(params.cursor if params else None)
            page = int(params.cursor) if params else 0
            return SimpleNamespace(tools=[types.Tool(name=f"t{page}", input_schema={"type": "object"})],
                                   next_cursor=str(page + 1) if page < 2 else None)
    assert [t.name for t in await _list(Paged())] == ["t0", "t1", "t2"]
    assert Paged.asked == [None, "1", "2"]


def test_a_child_node_never_inherits_the_parents_mcp_servers_nor_their_tokens(tmp_path):
    from meshnode.base.config import load_config
    from meshnode.engines.spawn import bundle, child_config

    (tmp_path / "config.toml").write_text('[mcp.servers.search]\nurl = "https://tools.example/mcp"\n'
                                          'token = "s3cret-token"\n', encoding="utf-8")
    parent = load_config(tmp_path, environ={})
    assert parent.values["mcp"]["servers"]["search"]["token"] == "s3cret-token"
    did = NodeKey.generate().did
    values = child_config.child_values(parent, name="kid", kind="clone", listen_port=1, web_port=2, parent_did=did)
    assert values["mcp"] == {"servers": {}}
    assert "s3cret-token" not in bundle.template_text(parent, name="kid", kind="clone", parent_did=did)


async def test_a_server_that_cannot_start_is_retried_and_said_not_connected(lab, tmp_path):
    clients = Clients(settings.parse({"gone": {"command": str(tmp_path / "no-such-server"), "trusted": True}}),
                      tmp_path)
    gate = lab["make"](mcp=lambda gate: McpTools(clients, gate))
    async with trio.open_nursery() as nursery:
        await nursery.start(clients.run)
        await until(lambda: clients.links["gone"].error is not None, what="the first failure")
        assert "not connected: gone: " in gate.mcp.catalogue() and "no-such-server" in gate.mcp.catalogue()
        result = await mcp_commands.run(gate, Command("g1", "mcp_call", {"tool": "mcp.gone.anything"}))
        assert (result["status"], result["code"]) == ("error", "mcp_unavailable")
        assert await pending(lab["store"]) == []
        nursery.cancel_scope.cancel()


def test_a_running_node_connects_its_servers_and_its_agent_uses_them(llms):
    """``meshnode run`` with [mcp.servers] (here from the environment): the server is up in the
    status; a read-only tool configured low runs at once (beside the tick: its answer comes as a
    process result); one that asks runs once a person answers ``meshnode confirm approve``; both
    results reach the agent's prompt."""
    import shutil
    import sqlite3
    import tempfile

    from meshharness import Node, wait_until

    ask = [{"cmd_id": "a1", "type": "mcp.tt.add", "args": {"a": 20, "b": 22}},
           {"cmd_id": "s1", "type": "mcp.tt.shout", "args": {"text": "from the node"}}]
    llm = llms("main", [answer_with(0, *ask), *(answer_with(i) for i in range(1, 40))])
    root = Path(tempfile.mkdtemp(prefix="mcp", dir="/tmp"))  # short: the control socket's path
    servers = (f'{{tt = {{command = {json.dumps(sys.executable)}, args = [{json.dumps(SERVER)}], trusted = true,'
               f' tools = {{add = "low"}}}}}}')
    node = Node(root, "mcp", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2", "MESHNODE_MCP_SERVERS": servers})
    try:
        node.cli("llm", "add", "main", "--url", llm.url, "--model", "m")
        node.start()
        conn = sqlite3.connect(node.home / "data" / "meshnode.db")

        def logged(name):
            return conn.execute("SELECT value FROM process_log WHERE name = ?", (name,)).fetchone()
        wait_until(lambda: logged("cmd:a1") and logged("cmd:s1"), 60, "the agent's calls")
        ran = json.loads(logged("cmd:a1")[0])["result"]  # inline_seconds 0 (the default): it went on beside the tick
        assert ran["status"] == "running" and ran["tool"] == "mcp.tt.add", ran
        assert json.loads(logged("cmd:s1")[0])["result"]["status"] == "needs_confirmation"
        [mcp_status] = node.call("status")["cognition"]["mcp_servers"]
        assert mcp_status["status"] == "up" and "shout" in mcp_status["tools"] and not mcp_status["sandboxed"]
        assert f"mcp:       tt up ({len(mcp_status['tools'])} tools)" in node.cli("status")  # a person sees it too
        [req_id] = [r for (r,) in conn.execute("SELECT id FROM gate_confirmations WHERE tool = 'mcp.tt.shout'")]
        node.cli("confirm", "approve", str(req_id))
        wait_until(lambda: any("FROM THE NODE!" in p and "42" in p for p in llm.prompts()), 60,
                   "a prompt with both results")
        conn.close()
    finally:
        node.stop()
        shutil.rmtree(root, ignore_errors=True)


async def test_a_hostile_servers_catastrophic_regex_never_freezes_the_node(lab, tmp_path):
    """A tool whose input and output schemas hold ``^(a+)+$`` (Python's re backtracks for ages on
    "aaaa...!" and holds the GIL): the args are not matched against it, nor is the result
    (the node shows results as text): the call returns as any other."""
    async with trio.open_nursery() as nursery:
        mcp = await connected(lab, tmp_path, nursery, tt=stdio(risk="low", timeout_seconds=20))
        assert '"pattern": "^(a+)+$"' in json.dumps(mcp.clients.links["tt"].tools["evil"].schema)
        result = await mcp.call("mcp.tt.evil", {"text": "a" * 40 + "!"})
        assert json.loads(result["result"]) == {"word": "a" * 40 + "!"}
        nursery.cancel_scope.cancel()


def test_args_are_checked_without_the_servers_regexes():
    from meshnode.engines.mcp_tools.calls import check_args

    evil = {"type": "object", "properties": {"t": {"type": "string", "pattern": "^(a+)+$"}},
            "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    check_args({"t": "a" * 40 + "!", "a" * 40 + "!": 1}, evil)  # neither regex runs (each would take ages)
    with pytest.raises(GateError, match="args.t: 1 is not of type 'string'"):
        check_args({"t": 1}, evil)  # the rest of the schema still is checked


async def test_a_tools_json_rpc_error_is_its_error_and_a_stale_sessions_failure_spares_the_next(lab, tmp_path):
    """A JSON-RPC error answer (MCPError) is the tool's refusal: the link stays up. A call on an
    old session failing after the link reconnected marks only that old session broken."""
    from mcp.shared.exceptions import MCPError

    class Fake:
        def __init__(self, failure):
            self.failure = failure

        async def call_tool(self, name, args):
            if isinstance(self.failure, ConnectionError):
                link.broken = trio.Event()  # the link reconnected meanwhile: a new session, a new event
            raise self.failure
    clients = Clients(settings.parse({"tt": stdio(risk="low")}), tmp_path)
    gate = lab["make"](mcp=lambda gate: McpTools(clients, gate))
    link = clients.links["tt"]
    link.status, link.tools = "up", {"t": ToolInfo("t", "", {"type": "object"}, True, None)}
    link.session = Fake(MCPError(-32602, "unknown argument: x"))
    with pytest.raises(GateError) as info:
        await gate.mcp.call("mcp.tt.t", {"x": 1})
    assert (info.value.code, info.value.reason) == ("mcp_tool_error", "mcp.tt.t failed: unknown argument: x")
    assert not link.broken.is_set() and link.error is None
    old = link.broken
    link.session = Fake(ConnectionError("gone"))
    with pytest.raises(GateError) as info:
        await gate.mcp.call("mcp.tt.t", {"x": 2})
    assert info.value.code == "mcp_unavailable" and old.is_set() and not link.broken.is_set()


async def test_an_http_servers_answer_is_read_up_to_a_limit():
    """The SDK reads a JSON answer whole: the node's HTTP client stops a body past the limit
    (an SSE stream's events are bounded by the SDK itself)."""
    import httpx2

    from meshnode.engines.mcp_tools.capped_http import CappedTransport

    class Body(httpx2.AsyncByteStream):
        def __init__(self, n):
            self.n = n

        async def __aiter__(self):
            for _ in range(self.n // 100):
                yield b"x" * 100

    def answer(request):
        kind = "text/event-stream" if request.url.path == "/sse" else "application/json"
        return httpx2.Response(200, headers={"content-type": kind}, stream=Body(int(request.url.params["n"])))
    async with httpx2.AsyncClient(transport=CappedTransport(httpx2.MockTransport(answer), 1000)) as client:
        assert len((await client.post("http://h/mcp?n=1000")).content) == 1000
        with pytest.raises(httpx2.StreamError, match="more than 1000 bytes in one answer"):
            await client.post("http://h/mcp?n=1100")
        assert len((await client.post("http://h/sse?n=5000")).content) == 5000


def test_the_openai_definitions_fit_the_outside_budget_shared_among_servers_and_are_built_once(tmp_path):
    """A server with many long schemas cannot crowd out another's tools nor pass the budget; the
    definitions are built again only when a server's tool list changes."""
    from meshnode.engines.cognition import contexts

    big = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(6)}}
    clients = Clients(settings.parse({"huge": {"command": "x"}, "small": {"command": "x"}}), tmp_path)
    clients.links["huge"].tools = {f"t{i}": ToolInfo(f"t{i}", "big", big, True, None) for i in range(40)}
    clients.links["small"].tools = {n: ToolInfo(n, "small", {"type": "object"}, True, None) for n in ("a", "b")}
    mcp = McpTools(clients, gate=None)
    budget = contexts.BUDGET["outside"]
    offered = mcp.openai_tools(budget)
    names = [d["function"]["name"] for d in offered]
    assert {"mcp__small__a", "mcp__small__b"} <= set(names) and "mcp__huge__t0" in names
    assert sum(len(json.dumps(d, separators=(",", ":"))) for d in offered) <= budget
    assert len(names) < 42  # the huge server's 40 (over 1 KB each) do not all fit
    assert mcp.openai_tools(budget) is offered  # nothing changed: not built again
    clients.links["small"].tools = {"c": ToolInfo("c", "small", {"type": "object"}, True, None)}
    assert "mcp__small__c" in [d["function"]["name"] for d in mcp.openai_tools(budget)]


def test_urls_are_logged_without_their_secrets():
    from meshnode.engines.mcp_tools.clients import _reason, plain_url

    assert plain_url("https://me:pw@tools.example:8443/mcp?token=s3#x") == "https://tools.example:8443/mcp"
    reason = _reason(ExceptionGroup("x", [OSError("no answer from http://me:pw@h/mcp?key=s3 now")]))
    assert reason == "OSError: no answer from http://h/mcp now"


@needs_root
async def test_a_servers_stderr_reaches_the_person_never_the_agents_prompt(lab, tmp_path):
    talk = "import sys; sys.stderr.write('my key is k-12345 http://u:p@h/x?t=9\\n'); sys.exit(3)"
    clients = Clients(settings.parse({"loud": {"command": sys.executable, "args": ["-c", talk],
                                               "read_only": [sys.base_prefix, sys.prefix]}}), tmp_path)
    gate = lab["make"](mcp=lambda gate: McpTools(clients, gate))
    async with trio.open_nursery() as nursery:
        await nursery.start(clients.run)
        await until(lambda: clients.links["loud"].last_words is not None, what="the server's failure")
        [status] = clients.status()
        assert "k-12345" in status["stderr"] and "http://h/x" in status["stderr"] and "u:p" not in status["stderr"]
        assert "not connected: loud" in gate.mcp.catalogue() and "k-12345" not in gate.mcp.catalogue()
        with pytest.raises(GateError) as info:
            await gate.mcp.call("mcp.loud.x", {})
        assert info.value.code == "mcp_unavailable" and "k-12345" not in info.value.reason
        nursery.cancel_scope.cancel()


def test_a_tool_with_a_huge_output_schema_is_skipped():
    from mcp import types

    from meshnode.engines.mcp_tools.clients import MAX_SCHEMA, _tools

    huge = {"type": "object", "description": "x" * MAX_SCHEMA}
    tools, skipped = _tools([types.Tool(name="ok", input_schema={"type": "object"}, output_schema={"type": "object"}),
                             types.Tool(name="big", input_schema={"type": "object"}, output_schema=huge)])
    assert list(tools) == ["ok"] and skipped == [f"big: its output schema is longer than {MAX_SCHEMA} characters"]


async def test_invalid_calls_repeated_meet_the_loop_detector(lab, tmp_path):
    clients = Clients(settings.parse({"tt": stdio(risk="low")}), tmp_path)
    gate = lab["make"](mcp=lambda gate: McpTools(clients, gate))  # loop_repeats=3
    link = clients.links["tt"]
    link.status, link.tools = "up", {"t": ToolInfo("t", "", {"type": "object", "required": ["a"]}, True, None)}
    codes = []
    for _ in range(4):
        with pytest.raises(GateError) as info:
            await gate.mcp.call("mcp.tt.t", {"b": 1})
        codes.append(info.value.code)
    assert codes == ["bad_args", "bad_args", "bad_args", "loop"]
