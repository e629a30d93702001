"""The LLM client's streamed answers (engines/cognition/llm.py): ``stream: true`` read chunk by chunk
into the same answer a whole JSON body gives, pieces handed on as they come, a server that does not
stream still understood, a retry voiding what was streamed, and the limits kept."""

from __future__ import annotations

import json

import httpx
import pytest
import trio

from meshnode.engines.cognition import llm
from meshnode.records.mind.registry import Endpoint

EP = Endpoint(id="main", base_url="http://llm.test/v1", model="m", timeout_s=5.0)


def _sse(*chunks, done=True) -> bytes:
    out = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


def _delta(**delta) -> dict:
    return {"choices": [{"index": 0, "delta": delta}]}


def _ask(handler, **kw):
    seen: list = []

    async def main():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await llm.chat(EP, [{"role": "user", "content": "hi"}], client=client, backoff_s=0,
                                  on_delta=seen.append, **kw)
    return trio.run(main), seen


def test_a_streamed_answer_is_the_whole_answer_and_comes_in_pieces():
    bodies = []
    words = ["The ", "answer ", "is **4**."]

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=b": keep-alive\n\n" + _sse(_delta(role="assistant"), *[_delta(content=w) for w in words]))

    answer, seen = _ask(handler)
    assert answer == "The answer is **4**." and seen == words
    assert bodies[0]["stream"] is True


def test_streamed_tool_calls_become_the_same_commands_block_as_a_whole_body():
    call = {"id": "c1", "type": "function", "function": {"name": "note_add", "arguments": '{"text": "hi"}'}}

    def whole(request):
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok", "tool_calls": [call]}}]})

    def streamed(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_sse(
            _delta(content="ok"),
            _delta(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "note_add", "arguments": '{"te'}}]),
            _delta(tool_calls=[{"index": 0, "function": {"arguments": 'xt": "hi"}'}}])))

    async def plain():
        async with httpx.AsyncClient(transport=httpx.MockTransport(whole)) as client:
            return await llm.chat(EP, [{"role": "user", "content": "hi"}], client=client)
    expected = trio.run(plain)
    answer, _ = _ask(streamed)
    assert answer == expected and '"type": "note_add"' in answer


def test_a_server_that_does_not_stream_answers_one_body():
    def handler(request):
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, json={"choices": [{"message": {"content": "whole"}}]})

    answer, seen = _ask(handler)
    assert answer == "whole" and seen == []


def test_a_retry_voids_what_was_streamed():
    calls = {"n": 0}

    def handler(request):
        calls["n"] += 1
        if calls["n"] == 1:
            return httpx.Response(503)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_sse(_delta(content="two")))

    answer, seen = _ask(handler)
    assert answer == "two" and seen == [None, "two"]


def test_an_error_chunk_and_a_bad_chunk_are_typed_errors(monkeypatch):
    def failing(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_sse(_delta(content="a"), {"error": {"message": "model crashed"}}))

    with pytest.raises(llm.LLMError, match="model crashed"):
        _ask(failing)

    def garbage(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: {nope\n\n")

    with pytest.raises(llm.LLMError) as bad:
        _ask(garbage)
    assert bad.value.code == "llm_bad_answer"
    monkeypatch.setattr(llm, "answer_limit", lambda: 10)

    def long(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_sse(*[_delta(content="x" * 5)] * 10))

    with pytest.raises(llm.LLMError, match="more than 20 bytes"):
        _ask(long)
