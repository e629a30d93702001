"""The command catalogue: every registered command, with its arguments, made from the one schema
that also checks it (context 2, ``help``, the OpenAI tool definitions), and the size caps that
follow from it. Each test walks the registry, so commands added later are held to it too."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import meshnode.node.run  # noqa: F401  (everything the node registers)
from meshnode.engines.cognition import catalogue, contexts, executor
from meshnode.engines.cognition.command_types import answer_limit, command_names, command_type
from meshnode.engines.cognition.commands import MAX_COMMANDS, extract, size
from meshnode.engines.gate.tools import TOOLS, openai_tools
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database

NAMES = command_names()


def block(*commands: dict) -> str:
    return "# Commands:\n" + "\n".join(json.dumps(c) for c in commands) + "\n# End of commands\n"


def context_2(db: Database) -> str:
    text = contexts.build(db, now_ms=1_800_000_000_000, tick=1, recent_k=5, mode="normal", llm_id="x")[1]["content"]
    return text.split("## Commands (context 2)\n", 1)[1].split("\n\n## ", 1)[0]


def test_every_registered_command_is_in_the_prompt_with_its_arguments_within_the_budget(tmp_path):
    db = Database(tmp_path / "c.db")
    try:
        shown = context_2(db)
    finally:
        db.close()
    assert not shown.endswith(contexts.CUT), "context 2 is cut: raise BUDGET['help'] or shorten summaries"
    assert len(shown) <= contexts.BUDGET["help"]
    lines = {line.split("(", 1)[0]: line for line in shown.splitlines() if "(" in line}
    for name in NAMES:
        assert name in lines, f"{name} is not in context 2"
        for arg, (check, required) in command_type(name).schema.fields.items():
            assert f"{arg}{'' if required else '?'}:" in lines[name], (name, arg)


def test_the_registry_is_complete_wherever_it_is_asked():
    """A module that registers commands must be loaded by the executor chain: a fresh process that
    asks only command_types knows every command the running node registers."""
    fresh = subprocess.run([sys.executable, "-c", "from meshnode.engines.cognition.command_types import command_names;"
                            " print(' '.join(command_names()))"], capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_argument_carries_the_schema_it_is_checked_by(name):
    kind = command_type(name)
    for arg, (check, _) in kind.schema.fields.items():
        assert hasattr(check, "json"), f"{name}.{arg}: wrap its check with container.schema.described(check, schema)"
        label = catalogue.type_label(check.json)
        assert label != "any" or check.json == {}, (name, arg, check.json)


@pytest.mark.parametrize("name", NAMES)
def test_help_gives_each_argument_in_words_and_an_example_that_is_accepted(name):
    detail = executor.run(None, NodeKey(bytes(32)), 0, extract(block(
        {"cmd_id": "h", "type": "help", "args": {"command": name}})).commands[0])["result"]
    assert set(detail["args"]) == set(command_type(name).schema.fields)
    assert all(v.startswith(("required: ", "optional: ")) for v in detail["args"].values())
    example = extract(block(detail["example"]))
    assert [c.type for c in example.commands] == [name], example.errors


def test_the_tool_definitions_carry_every_commands_argument_schema():
    tools = {t["function"]["name"]: t["function"] for t in catalogue.tool_definitions()}
    assert sorted(tools) == NAMES
    for name, fn in tools.items():
        params = fn["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["properties"]) == set(command_type(name).schema.fields)
        assert params == catalogue.arguments_schema(command_type(name))
    assert tools["task_add"]["parameters"]["required"] == ["title"]
    assert tools["task_add"]["parameters"]["properties"]["priority"] == {"type": "number", "minimum": 0, "maximum": 1}
    for gate_tool in openai_tools():  # the gate's tools are offered exactly as the gate defines them
        assert tools[gate_tool["function"]["name"]] == gate_tool["function"]


def _largest_value(schema: dict):
    if schema.get("type") == "string" and "maxLength" in schema and "format" not in schema and "enum" not in schema:
        return "a" * schema["maxLength"]
    if schema.get("type") == "array" and "maxItems" in schema:
        item = _largest_value(schema.get("items", {}))
        return [item] * schema["maxItems"] if item is not None else None
    return None


@pytest.mark.parametrize("name", NAMES)
def test_what_a_schema_admits_is_never_refused_for_its_size(name):
    """Every text and list argument at its largest, all at once: the command is accepted (issue 12
    item 14: write_file's 1 MiB content was refused by a 64 KiB command cap)."""
    kind = command_type(name)
    args = dict(catalogue.help_of(kind)["example"]["args"])
    for arg, (check, _) in kind.schema.fields.items():
        value = _largest_value(check.json)
        if value is not None:
            args[arg] = value
    answer = block({"cmd_id": "big", "type": name, "args": args})
    assert len(answer) <= answer_limit()
    result = extract(answer)
    assert [c.type for c in result.commands] == [name], result.errors
    over = kind.max_size - size(args)  # and one past the cap is refused, by name
    if over > 0:
        result = extract(block({"cmd_id": "big", "type": name, "args": args, "description": "x" * over}))
        assert [e.code for e in result.errors] == ["command_too_large"] and name in result.errors[0].reason


def test_commands_past_the_limit_are_named_in_an_error_not_dropped_silently():
    many = [{"cmd_id": f"m{i}", "type": "llm_memory_add", "args": {"text": f"memory {i}"}} for i in range(1, 71)]
    for answer in (block(*many), "# Commands:\n" + json.dumps(many) + "\n",
                   "".join(f"```json\n{json.dumps(c)}\n```\n" for c in many)):
        result = extract(answer)
        assert [c.cmd_id for c in result.commands] == [f"m{i}" for i in range(1, MAX_COMMANDS + 1)]
        [error] = result.errors
        assert error.code == "too_many_commands" and "these 6 were not run" in error.reason
        assert all(f"m{i} (llm_memory_add)" in error.reason for i in range(65, 71))
    flood = extract(block(*[{"cmd_id": f"f{i}", "type": "note_list"} for i in range(2000)]))
    assert len(flood.commands) == MAX_COMMANDS and "these 256 or more were not run" in flood.errors[0].reason
    assert len(flood.errors[0].reason) < 2000


def test_an_auxiliary_loop_is_shown_exactly_the_commands_it_may_run(tmp_path):
    from meshnode.engines.cognition import auxiliary
    from meshnode.engines.cognition.commands import Command

    db = Database(tmp_path / "a.db")
    try:
        with db.transaction() as conn:
            task = conn.execute("INSERT INTO tasks (name) VALUES ('look into quorums')").lastrowid
        shown = auxiliary._context(db, task).split("Your commands:\n", 1)[1]
    finally:
        db.close()
    listed = {line.split("(", 1)[0] for line in shown.splitlines() if "(" in line and not line.startswith(("{", "One"))}
    assert {"note_add", "task_update", "diary_search", "help"} <= listed
    for name in NAMES:
        kind = command_type(name)
        runs = executor.handles(name) and auxiliary.allowed(task, Command("c", name, {"id": task}, "", None,
                                                                           kind.mutating)) is None
        assert (name in listed) == runs, name
