"""Command extraction from LLM answers: tolerant of formatting noise, strict about what is accepted,
and never raising, whatever the answer."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.engines.cognition.command_types import answer_limit
from meshnode.engines.cognition.commands import MAX_COMMANDS, Command, extract

VALID = [
    {"cmd_id": "c-1", "type": "diary_add", "args": {"text": "mesh scales", "tags": ["mesh"]}, "description": "note it"},
    {"cmd_id": "c.2", "type": "note_list", "args": {"limit": 5}},
    {"cmd_id": "task:3", "type": "llm_task", "target_llm": "helper", "args": {"task_description": "summarise"}},
]


def as_command(raw: dict) -> tuple:
    return (raw["cmd_id"], raw["type"], raw["args"], raw.get("description", ""), raw.get("target_llm"))


def got(answer: str) -> list[tuple]:
    return [(c.cmd_id, c.type, c.args, c.description, c.target_llm) for c in extract(answer).commands]


def render(commands: list[dict], style: int) -> str:
    body = {
        0: "\n".join(json.dumps(c) for c in commands),
        1: "\n".join(f"```json\n{json.dumps(c, indent=2)}\n```" for c in commands),
        2: json.dumps(commands, indent=1),
        3: "\n".join(f"- {json.dumps(c)}  <- this one matters" for c in commands),
    }[style % 4]
    header, footer = [("# Commands:", "# End of commands"), ("## Команды:", "# Конец команд"),
                      ("# commands", "")][style % 3]
    lead = "Thinking about it for a while.\n\n" if style % 2 else "Thinking about it for a while. "  # header mid-line
    return f"{lead}{header}\n{body}\n{footer}\nAnd then some closing words.\n"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(VALID), min_size=1, max_size=3, unique_by=lambda c: c["cmd_id"]), st.integers(0, 11))
def test_commands_survive_the_usual_formatting_noise(commands, style):
    assert got(render(commands, style)) == [as_command(c) for c in commands]


def test_a_fenced_json_block_outside_a_section_is_read_and_prose_braces_are_not():
    answer = ("I will use {curly braces} in prose and [brackets] too.\n"
              f"```json\n{json.dumps(VALID[0])}\n```\n"
              "```json\n{\"just\": \"data, not a command\"}\n```\n")
    assert got(answer) == [as_command(VALID[0])]
    assert extract(answer).errors == []


def test_what_is_not_accepted_becomes_an_error_with_a_reason_and_is_not_run():
    bad = [
        {"cmd_id": "x1", "type": "shell", "args": {"cmd": "rm -rf /"}},              # no such command
        {"cmd_id": "x2", "type": "note_add", "args": {"text": "hi", "audience": "everyone"}},  # bad value
        {"cmd_id": "x3", "type": "note_add", "args": {"text": "hi", "sudo": True}},  # unknown argument
        {"cmd_id": "x4", "type": "note_add", "args": "text=hi"},                      # args not a map
        {"cmd_id": "x 5; rm", "type": "note_list", "args": {}},                      # bad id
        {"cmd_id": "c-1", "type": "note_list", "args": {}},                         # duplicate id
        {"cmd_id": "x6", "type": "note_list", "args": {}, "run_as": "root"},        # unknown field
    ]
    result = extract(render([VALID[0], *bad], 0))
    assert [c.cmd_id for c in result.commands] == ["c-1"]
    codes = [(e.cmd_id, e.code) for e in result.errors]
    assert codes == [("x1", "unknown_type"), ("x2", "bad_args"), ("x3", "bad_args"), ("x4", "bad_args"),
                     (None, "bad_cmd_id"), ("c-1", "duplicate_cmd_id"), ("x6", "bad_command")]
    assert all(e.reason for e in result.errors)


def test_hostile_answers_are_bounded():
    deep = "# Commands:\n" + "[" * 100_000 + "]" * 100_000
    assert extract(deep).commands == []
    flood = render([{"cmd_id": f"f{i}", "type": "note_list", "args": {}} for i in range(500)], 2)
    result = extract(flood)
    assert len(result.commands) + len(result.errors) <= MAX_COMMANDS + 1
    assert any(e.code == "too_many_commands" for e in result.errors)
    deep_value: list = [1]
    for _ in range(20):
        deep_value = [deep_value]
    nested = {"cmd_id": "n1", "type": "cycle_settings", "args": {"idle": {"a": deep_value}}}
    assert [e.code for e in extract(render([nested], 0)).errors] == ["command_too_large"]
    assert extract("x" * (answer_limit() + 1)).errors[0].code == "answer_too_long"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_no_answer_makes_extraction_raise(text):
    result = extract(text)
    assert all(isinstance(c, Command) for c in result.commands)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 11), st.data())
def test_mutated_answers_never_raise(style, data):
    answer = render(VALID, style)
    for _ in range(data.draw(st.integers(1, 5))):
        i = data.draw(st.integers(0, len(answer)))
        answer = answer[:i] + data.draw(st.sampled_from(["{", "}", "[", "]", '"', ",", "```", "\n# Commands:\n",
                                                          "\\", "\x00", "1e999999"])) + answer[i:]
    extract(answer)


def test_confidence_spans_the_overall_confidence_and_unverified_facts():
    answer = ("[confidence=0.4]the sky is green[/confidence] and [confidence=2]out of range[/confidence]\n"
              "UnverifiedFacts: [\n"
              ' {"id": "f1", "claim": "the sky is green", "confidence": 0.4, "sources": ["a dream"], "priority": 2},\n'
              ' {"id": "f2", "claim": "", "confidence": 0.9},\n'
              ' {"id": "f3", "claim": "cats bark", "confidence": 1.5}\n'
              "],\nConfidence: 0.55\n")
    result = extract(answer)
    assert result.confidence_spans == [(0.4, "the sky is green")]
    assert result.confidence == 0.55
    assert [(f.id, f.claim, f.confidence, f.sources, f.priority) for f in result.facts] == [
        ("f1", "the sky is green", 0.4, ("a dream",), 2)]
    assert [e.code for e in result.errors] == ["bad_fact", "bad_fact"]


def test_openai_tool_calls_become_commands_and_pass_the_same_checks():
    import httpx

    from meshnode.engines.cognition.catalogue import tool_definitions
    from meshnode.engines.cognition.llm import _content
    from meshnode.records.mind.registry import Endpoint

    calls = [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}},
             {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": 7}'}},
             {"id": "call_3", "type": "function", "function": {"name": "rm_rf", "arguments": "{}"}},
             {"id": "call_4", "type": "function", "function": {"name": "diary_add", "arguments": "not json"}}]
    response = httpx.Response(200, json={"choices": [{"message": {"content": None, "tool_calls": calls}}]})
    text = _content(Endpoint("m", "http://x", "m"), response)
    result = extract(text)
    assert [(c.cmd_id, c.type, c.args) for c in result.commands] == [("call_1", "read_file", {"path": "a.txt"})]
    assert sorted(e.cmd_id for e in result.errors) == ["call_2", "call_3", "call_4"]
    offered = {t["function"]["name"]: t["function"] for t in tool_definitions()}
    assert offered["read_file"]["parameters"]["required"] == ["path"] and "diary_add" in offered
