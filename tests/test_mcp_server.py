"""meshnode as an MCP server, with the official MCP client against a real node: ``meshnode mcp`` over
stdio and ``/mcp`` over Streamable HTTP list the same tools, each tool works through the running node,
bad arguments and the node's refusals are tool errors with a readable reason (never a traceback),
``/mcp`` needs the web token, and ask_agent returns the (scripted) agent's reply."""

from __future__ import annotations

import json

import httpx
import pytest
import trio
from mcp.shared.exceptions import MCPError

from llmharness import command_block, distinct_answers
from mcpharness import http_session, refusal, result, stdio_session, text_of
from meshharness import Node, metric
from meshnode.base.identity.keys import NodeKey
from meshnode.store.short_ids import short_container_id
from webharness import agent_node

TOOLS = {"notes", "note_read", "note_add", "diary", "diary_add", "concepts", "concept_add", "links", "link_add",
         "goal_list", "goal_show", "goal_add", "goal_cancel", "task_list", "task_show", "task_add", "task_update",
         "task_review",
         "ask_agent", "chat_thread", "status", "peers", "formation", "find_peer", "find_by_interest", "reputation",
         "names", "name_set", "name_unset"}
READ_ONLY = {"notes", "diary", "concepts", "links", "goal_list", "goal_show", "task_list", "task_show",
             "chat_thread", "status", "peers", "formation", "find_peer", "find_by_interest", "reputation", "names"}
DESTRUCTIVE = {"goal_cancel", "task_update", "task_review", "name_set", "name_unset"}  # a petname set replaces the old one
QUESTION = "what is 2+2? (mcp-okapi)"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with agent_node(tmp_path_factory.mktemp("mcp"), distinct_answers(500, lambda i, text: [])) as node:
        yield node


async def test_stdio_lists_every_tool_typed_and_annotated(web, tmp_path):
    async with stdio_session(web.node, tmp_path / "err.log") as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) == TOOLS
        for name, tool in tools.items():
            assert tool.description and tool.input_schema["type"] == "object", name
            assert tool.annotations.read_only_hint is (name in READ_ONLY), name
            if name not in READ_ONLY:
                assert tool.annotations.destructive_hint is (name in DESTRUCTIVE), name
        text = tools["note_add"].input_schema["properties"]["text"]
        assert text["type"] == "string" and text["maxLength"] == 64 * 1024
        assert tools["ask_agent"].input_schema["properties"]["wait_seconds"]["maximum"] == 60
        assert tools["note_add"].input_schema["required"] == ["text"]
        uris = {str(r.uri) for r in (await s.list_resources()).resources}
        assert uris == {"meshnode://chat/recent", "meshnode://goals"}


async def test_stdio_tools_act_on_the_running_node(web, tmp_path):
    async with stdio_session(web.node, tmp_path / "err.log") as s:
        status = await result(s, "status")
        assert status["did"] == web.node.did and status["running"] is True
        note = await result(s, "note_add", text="an okapi note from MCP", tags=["mcp"])
        [row] = await result(s, "notes", query="okapi")
        assert row["container_did"] == note["did"]
        assert (row["asked_kind"], row["asked_via"], row["source"]) == ("person", "mcp", "user")  # `meshnode mcp`
        with pytest.raises(MCPError) as claimed:  # not a parameter: refused, and nothing is written
            await s.call_tool("note_add", {"text": "an okapi that claims the CLI", "source": "cli"})
        assert claimed.value.error.code == -32602 and '"source"' in claimed.value.error.message
        assert await result(s, "notes", query="claims the CLI") == []
        read = await result(s, "note_read", did=note["did"])
        assert read["text"] == "an okapi note from MCP" and "mcp" in read["tags"]
        entry = await result(s, "diary_add", text="today I spoke MCP", title="MCP")
        assert entry["did"] in json.dumps(await result(s, "diary"))
        a = (await result(s, "concept_add", label="okapi", description="a forest giraffe"))["did"]
        b = (await result(s, "concept_add", label="giraffe"))["did"]
        assert {a, b} <= set(json.dumps(await result(s, "concepts")).split('"'))
        link = await result(s, "link_add", source=a, relation="related_to", targets=[b])
        assert link["did"] in json.dumps(await result(s, "links"))
        goal = (await result(s, "goal_add", title="learn about okapis", priority=0.5))["lineage"]
        assert goal in [g["lineage"] for g in await result(s, "goal_list")]
        task = (await result(s, "task_add", goal=goal, title="read one article"))["lineage"]
        assert task in json.dumps(await result(s, "goal_show", goal=goal))
        assert task in [t["lineage"] for t in await result(s, "task_list", goal=goal)]
        assert (await result(s, "task_show", task=task))["lineage"] == task
        assert "not_finished" in await refusal(s, "task_review", task=task, verdict="accept")  # nothing to review yet
        assert (await result(s, "goal_show", goal=short_container_id(goal)))["lineage"] == goal  # as listings show it
        tree = json.loads((await s.read_resource("meshnode://goals")).contents[0].text)
        assert [g["lineage"] for g in tree["goals"]] == [goal]
        cancelled = await result(s, "goal_cancel", goal=goal, reason="done with it")
        assert cancelled["status"] == "cancelled" and task in cancelled["abandoned"]
        # the node's refusals are tool errors naming the code and the reason
        assert "goal_closed" in await refusal(s, "task_add", goal=goal, title="too late")
        assert "unknown_goal" in await refusal(s, "goal_show", goal="did:hmp:container:uEiNOPE")
        assert "thread_not_found" in await refusal(s, "chat_thread", thread="A" * 16)
        with pytest.raises(MCPError, match="thread_not_found"):  # a resource's error: the same code and reason
            await s.read_resource("meshnode://chat/thread/" + "A" * 16)
        assert isinstance(await result(s, "peers"), list)
        assert "connected" in json.dumps(await result(s, "formation"))
        assert "no_reputation" in await refusal(s, "reputation", did=web.node.did)
        other = NodeKey(bytes(32)).did
        await trio.to_thread.run_sync(web.node.cli, "reputation", "set", other, "0.8", "--reason", "I know it")
        rep = await result(s, "reputation", did=other)
        assert rep["did"] == other and "0.8" in json.dumps(rep)
        # petnames: the MCP client is the person, who names agents (the CLI's `name set|unset|list`)
        named = await result(s, "name_set", agent=other, petname="okapi keeper")
        assert (named["did"], named["name"], named["petname"]) == (other, "okapi keeper", "okapi keeper")
        assert {(n["did"], n["name"]) for n in await result(s, "names")} >= {(other, "okapi keeper")}
        assert (await result(s, "reputation", did="okapi keeper"))["did"] == other  # a tool taking an agent: by name
        assert "petname_taken" in await refusal(s, "name_set", agent=NodeKey(bytes([9]) * 32).did,
                                                petname="okapi keeper")
        assert (await result(s, "name_unset", agent="okapi keeper"))["petname"] is None  # by the petname
        assert "not_found" in await refusal(s, "name_unset", agent=other)
        assert "bad_petname" in await refusal(s, "name_set", agent=other, petname="did:key:z6Mkx")
        assert "petname must be a string of 1 to 32 characters" in await argument_error(s, "name_set", agent=other,
                                                                                           petname="x" * 33)
        assert await result(s, "find_by_interest", interest="okapi") == []
        with trio.fail_after(60):  # alone on its mesh: nobody to ask
            assert "not_found" in await refusal(s, "find_peer", did=NodeKey(bytes([7]) * 32).did)


async def argument_error(session, tool: str, **args) -> str:
    """A refused argument's text: one sentence, the code first, naming the argument, no pydantic and no URL."""
    text = await refusal(session, tool, **args)
    assert text.startswith("bad_arguments: ") and "\n" not in text, text
    assert "pydantic" not in text.lower() and "http" not in text and "validation error" not in text, text
    return text


async def unknown_argument(session, tool: str, **args) -> str:
    """The JSON-RPC error of an argument the tool does not take (-32602), its message."""
    with pytest.raises(MCPError) as refused:
        await session.call_tool(tool, args)
    assert refused.value.error.code == -32602, refused.value.error
    return refused.value.error.message


async def test_bad_arguments_are_tool_errors_with_a_reason(web, tmp_path):
    async with stdio_session(web.node, tmp_path / "err.log") as s:
        assert await argument_error(s, "notes", limit=0) == \
            "bad_arguments: limit must be an integer from 1 to 500: at most this many rows"
        assert (await argument_error(s, "note_add", text="x" * (64 * 1024 + 1))).startswith(
            "bad_arguments: text must be a string of 1 to 65536 characters")
        assert (await argument_error(s, "note_add")).startswith("bad_arguments: text is required")
        assert await argument_error(s, "note_add", text="x", audience="everyone") == \
            'bad_arguments: audience must be one of "private", "friends", "public"'
        assert "wait_seconds must be a number from 0 to 60" in await argument_error(s, "ask_agent", text="x",
                                                                                     wait_seconds=61)
        assert "thread must be a string matching" in await argument_error(s, "chat_thread", thread="../../etc")
        assert "did must be a string of 6 to 200 characters" in await argument_error(s, "reputation", did="x" * 201)
        assert "tags must be a list of at most 64 items" in await argument_error(s, "note_add", text="x",
                                                                                 tags=["t"] * 65)
        assert await unknown_argument(s, "notes", limt=5) == \
            'unknown argument "limt": notes takes query, limit, unread, topic, before'
        assert await unknown_argument(s, "status", verbose=True) == 'unknown argument "verbose": status takes no' \
                                                                     ' arguments'
        unknown = await s.call_tool("no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in text_of(unknown)
    assert "Traceback" not in (tmp_path / "err.log").read_text()


async def test_http_needs_the_token_and_serves_the_same_tools(web):
    # (a generous timeout: the first request that reaches the SDK loads it, seconds on a busy machine)
    async with httpx.AsyncClient(base_url=web.url, timeout=60) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        plain = await client.post("/mcp", json=body)
        assert plain.status_code == 401 and plain.json()["code"] == "unauthorized"
        assert plain.headers["www-authenticate"] == 'Bearer realm="meshnode"'  # RFC 6750 3: no error without a token
        wrong = await client.post("/mcp", json=body, headers={"Authorization": "Bearer " + "x" * 43})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].startswith('Bearer realm="meshnode", error="invalid_token"')
        bearer = {"Authorization": f"Bearer {web.token}"}
        as_text = await client.post("/mcp", content=json.dumps(body), headers={**bearer, "content-type": "text/plain"})
        assert as_text.status_code == 415 and as_text.json()["code"] == "bad_content_type"
        # a browser's session cookie is not an MCP client's credential (the Origin rule is the API's)
        login = await client.post("/api/login", json={"token": web.token}, headers={"Origin": web.url})
        assert login.status_code == 200 and client.cookies.get("meshnode_session")
        by_cookie = await client.post("/mcp", json=body, headers={"Origin": web.url})
        assert by_cookie.status_code == 401 and "Bearer" in by_cookie.json()["reason"]
        assert by_cookie.headers["www-authenticate"] == 'Bearer realm="meshnode"'
        client.cookies.clear()
        # a session's end is a DELETE with no body: the guard lets it reach the SDK (which answers for it)
        ended = await client.delete("/mcp", headers={**bearer, "mcp-session-id": "no-such-session"})
        assert ended.status_code != 415 and ended.status_code < 500, ended.text
    async with http_session(web.url, web.token) as s:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        assert (await result(s, "status"))["did"] == web.node.did
        assert await argument_error(s, "diary", limit=10**6) == \
            "bad_arguments: limit must be an integer from 1 to 500: at most this many rows"
        assert '"source"' in await unknown_argument(s, "note_add", text="x", source="cli")
        note = await result(s, "note_add", text="written over HTTP MCP")
        [row] = await result(s, "notes", query="written over HTTP MCP")
        assert (row["container_did"], row["asked_kind"], row["asked_via"]) == (note["did"], "person", "mcp")
        assert (await result(s, "note_read", did=note["did"]))["text"] == "written over HTTP MCP"
        assert "unknown_goal" in await refusal(s, "goal_show", goal="nope-nope")
        renamed = NodeKey(bytes([11]) * 32).did
        assert (await result(s, "name_set", agent=renamed, petname="over http"))["name"] == "over http"
        assert (await result(s, "name_unset", agent="over http"))["did"] == renamed
    assert metric(web.node, "mcp_calls", cmd="note_add", outcome="ok") >= 1
    assert metric(web.node, "mcp_calls", cmd="goal_show", outcome="unknown_goal") >= 1
    assert metric(web.node, "mcp_refused", tool="note_add", why="unknown_argument") >= 1
    assert metric(web.node, "mcp_refused", tool="diary", why="bad_arguments") >= 1
    assert metric(web.node, "web_requests", route="/mcp", status="401") >= 3


async def test_ask_agent_returns_the_agents_reply(web, tmp_path):
    async def answer_when_it_arrives():
        """The scripted agent answers the question once its id is known (the reply names it)."""
        def question_did():
            rows = web.node.call("notes", {"query": "mcp-okapi", "limit": 5})
            return rows[0]["container_did"] if rows else None
        while (did := await trio.to_thread.run_sync(question_did)) is None:
            await trio.sleep(0.1)
        web.llm.reply_when(QUESTION, "The person asks a sum. " + command_block(
            {"cmd_id": "mcp1", "type": "note_add", "args": {"text": "4", "reply_to": did}}))

    async with http_session(web.url, web.token) as s:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_when_it_arrives)
            with trio.fail_after(90):
                asked = await result(s, "ask_agent", text=QUESTION, wait_seconds=60)
        assert [r["text"] for r in asked["replies"]] == ["4"] and "pending" not in asked
        thread = await result(s, "chat_thread", thread=asked["thread"])
        assert [m["side"] for m in thread["messages"]] == ["person", "agent"]
        recent = json.loads((await s.read_resource("meshnode://chat/recent")).contents[0].text)
        [mine] = [t for t in recent["threads"] if t["thread"] == asked["thread"]]
        assert [a["text"] for a in mine["answers"]] == ["4"]
    async with stdio_session(web.node, tmp_path / "err.log") as s:
        quiet = await result(s, "ask_agent", text="anyone there? (no answer scripted)", wait_seconds=0.5)
        assert quiet["replies"] == [] and quiet["thread"] in quiet["pending"]


async def test_without_a_running_node_tools_say_node_not_running(tmp_path):
    idle = Node(tmp_path, "idle")
    async with stdio_session(idle, tmp_path / "err.log") as s:
        assert {t.name for t in (await s.list_tools()).tools} == TOOLS
        assert "node_not_running" in await refusal(s, "status")
    assert "no node is running" in (tmp_path / "err.log").read_text()
