"""An OpenAI-compatible chat-completions client (Ollama, llama.cpp server, vLLM, LM Studio).

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature"}``;
the answer is ``choices[0].message.content``. With ``tools`` (the OpenAI tools
format) the model may answer with ``tool_calls`` instead or as well: they are
turned into a ``# Commands:`` block appended to the text, so they pass the
same extraction and checks as written commands. Timeouts on every request,
retries with exponential backoff on connection errors, 429 and 5xx; any
other failure, or an answer of the wrong shape, is an ``LLMError`` with a
readable reason. Runs under trio (httpx picks the running async library).

With ``on_delta`` (the cycle's main tick) the request says ``"stream": true`` and the answer is read
as the server writes it (server-sent ``data:`` chunks of ``choices[0].delta``: ``content`` pieces and
``tool_calls`` pieces by ``index``), each piece of text handed to ``on_delta`` as it comes; the text
returned is the same as the whole answer's (the pieces joined, tool calls as the commands block). A
server that does not stream answers one JSON body, read as without ``on_delta``. A retry calls
``on_delta(None)``: the answer starts again.

Each call is observed as ``llm_request_seconds{llm, role}`` (retries and backoff included) in
the ``metrics`` passed, or else in the ``METRICS`` context variable: the cycle sets it once
(``METRICS.set(self.metrics)`` at the start of ``Cycle.run``) and every task it starts inherits
it, so the validators and auxiliary loops are measured without threading the registry through.
``role`` defaults to ``validator`` for a validator endpoint and ``main`` otherwise; the cycle
names ``assess`` and ``reflect``.
"""

from __future__ import annotations

import contextvars
import json
import os
import time
from typing import Callable

import httpx
import trio

from meshnode.engines.cognition.command_types import answer_limit
from meshnode.base.errors import MeshnodeError
from meshnode.records.mind.registry import Endpoint

METRICS: contextvars.ContextVar = contextvars.ContextVar("meshnode_llm_metrics", default=None)

BYTES_PER_CHARACTER = 2  # the HTTP body may carry the answer's text escaped again (JSON in JSON)
STREAM_OVERHEAD = 64  # a streamed answer's framing (a JSON chunk per token) against its text's limit


class LLMError(MeshnodeError):
    """An LLM that could not be reached or did not answer as the wire format says."""


async def chat(endpoint: Endpoint, messages: list[dict], *, temperature: float = 0.7, retries: int = 2,
               backoff_s: float = 0.5, client: httpx.AsyncClient | None = None,
               presence_penalty: float | None = None, tools: list[dict] | None = None,
               retry_timeouts: bool = True, role: str | None = None, metrics=None,
               on_delta: Callable[[str | None], None] | None = None) -> str:
    """The answer's text. A request that times out is retried like a refused connection, unless
    ``retry_timeouts`` is False: then it is an ``llm_timeout`` at once (the cycle restarts its tick).
    The time taken, answer or error, goes to ``llm_request_seconds{llm, role}`` (module docstring)."""
    metrics = metrics if metrics is not None else METRICS.get()
    started = time.monotonic()
    try:
        return await _chat(endpoint, messages, temperature=temperature, retries=retries, backoff_s=backoff_s,
                           client=client, presence_penalty=presence_penalty, tools=tools,
                           retry_timeouts=retry_timeouts, on_delta=on_delta)
    finally:
        if metrics is not None:
            metrics.observe("llm_request_seconds", time.monotonic() - started, llm=endpoint.id,
                            role=role or ("validator" if endpoint.validator else "main"))


async def _chat(endpoint: Endpoint, messages: list[dict], *, temperature: float, retries: int, backoff_s: float,
                client: httpx.AsyncClient | None, presence_penalty: float | None, tools: list[dict] | None,
                retry_timeouts: bool, on_delta: Callable[[str | None], None] | None = None) -> str:
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key_env and os.environ.get(endpoint.api_key_env):
        headers["Authorization"] = f"Bearer {os.environ[endpoint.api_key_env]}"
    body = {"model": endpoint.model, "messages": messages, "temperature": temperature}
    if presence_penalty:
        body["presence_penalty"] = presence_penalty
    if tools:
        body["tools"] = tools
    if on_delta is not None:
        body["stream"] = True
    url = endpoint.base_url.rstrip("/") + "/chat/completions"
    own = client is None
    client = client or httpx.AsyncClient(timeout=endpoint.timeout_s)
    try:
        for attempt in range(retries + 1):
            if attempt and on_delta is not None:
                on_delta(None)  # what was streamed of the failed attempt is void
            try:
                if on_delta is None:
                    response = await client.post(url, json=body, headers=headers)
                else:
                    answer, response = await _streamed(client, endpoint, url, body, headers, on_delta)
                    if answer is not None:
                        return answer
            except (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout) as exc:  # reached, but too slow
                problem, code = f"{endpoint.id} did not answer within {endpoint.timeout_s:g} s" \
                                f" ({type(exc).__name__})", "llm_timeout"
                if not retry_timeouts:
                    raise LLMError(code, problem) from None
            except httpx.HTTPError as exc:
                problem, code = f"cannot reach {endpoint.id} at {url}: {type(exc).__name__}", "llm_unreachable"
            else:
                if response.status_code == 200:
                    return _content(endpoint, response)
                problem, code = f"{endpoint.id} answered HTTP {response.status_code}", "llm_unreachable"
                if response.status_code != 429 and response.status_code < 500:
                    raise LLMError("llm_refused", problem)
            if attempt < retries:
                await trio.sleep(backoff_s * 2**attempt)
        raise LLMError(code, problem)
    finally:
        if own:
            await client.aclose()


async def _streamed(client: httpx.AsyncClient, endpoint: Endpoint, url: str, body: dict, headers: dict,
                    on_delta: Callable[[str | None], None]) -> tuple[str | None, httpx.Response]:
    """(the answer, or None for an HTTP error status, and the response) of a request with
    ``"stream": true``: its SSE chunks read as they come, or one JSON body from a server that does not
    stream. The answer is limited as a whole body is (``_content``)."""
    async with client.stream("POST", url, json=body, headers=headers) as response:
        if response.status_code != 200:
            return None, response
        if "text/event-stream" not in response.headers.get("content-type", ""):
            await response.aread()
            return _content(endpoint, response), response
        limit = BYTES_PER_CHARACTER * answer_limit()
        parts, size, raw, calls = [], 0, 0, {}
        async for line in response.aiter_lines():
            raw += len(line) + 1
            if raw > STREAM_OVERHEAD * limit:
                raise LLMError("llm_bad_answer", f"{endpoint.id} streamed more than {STREAM_OVERHEAD * limit} bytes")
            if not line.startswith("data:"):
                continue  # comments, event names, keep-alives
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                break
            text = _chunk(endpoint, data, calls)
            if text:
                size += len(text.encode("utf-8"))
                if size > limit:
                    raise LLMError("llm_bad_answer", f"{endpoint.id} answered more than {limit} bytes")
                parts.append(text)
                on_delta(text)
    content = "".join(parts)
    if calls:
        content += _as_commands([calls[i] for i in sorted(calls)])
    return content, response


def _chunk(endpoint: Endpoint, data: str, calls: dict) -> str:
    """The text of one streamed chunk; its tool-call pieces added to ``calls`` (by index: the id and
    name as they come, the arguments' text joined)."""
    try:
        chunk = json.loads(data)
        if isinstance(chunk, dict) and "error" in chunk:
            error = chunk["error"]
            reason = error.get("message") if isinstance(error, dict) else error
            raise LLMError("llm_unreachable", f"{endpoint.id} failed while answering: {str(reason)[:200]}")
        choices = chunk.get("choices") or []
        delta = (choices[0].get("delta") or {}) if choices else {}
        text = delta.get("content")
        pieces = delta.get("tool_calls") or []
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise LLMError("llm_bad_answer", f"{endpoint.id}'s streamed answer is not chat completion chunks") from None
    for piece in pieces if isinstance(pieces, list) else []:
        if not isinstance(piece, dict):
            continue
        index = piece.get("index", 0) if isinstance(piece.get("index", 0), int) else 0
        call = calls.setdefault(index, {"id": None, "function": {"name": "", "arguments": ""}})
        if isinstance(piece.get("id"), str):
            call["id"] = piece["id"]
        fn = piece.get("function") if isinstance(piece.get("function"), dict) else {}
        for key in ("name", "arguments"):
            value = fn.get(key)
            if isinstance(value, str):
                call["function"][key] += value
            elif value is not None:  # a server that sends the arguments as an object, whole
                call["function"][key] = value
    return text if isinstance(text, str) else ""


def _content(endpoint: Endpoint, response: httpx.Response) -> str:
    limit = BYTES_PER_CHARACTER * answer_limit()  # room for the largest command the catalogue admits
    if len(response.content) > limit:
        raise LLMError("llm_bad_answer", f"{endpoint.id} answered more than {limit} bytes")
    try:
        message = response.json()["choices"][0]["message"]
        content, calls = message.get("content"), message.get("tool_calls")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        raise LLMError("llm_bad_answer", f"{endpoint.id}'s answer is not a chat completion") from None
    if calls:
        content = (content if isinstance(content, str) else "") + _as_commands(calls)
    if not isinstance(content, str):
        raise LLMError("llm_bad_answer", f"{endpoint.id}'s answer has no text content")
    return content


def _as_commands(calls) -> str:
    """OpenAI ``tool_calls`` as a commands block; whatever is malformed is passed on as it is, for
    extraction to refuse with a reason (never here)."""
    lines = []
    for n, call in enumerate(calls if isinstance(calls, list) else [calls]):
        fn = call.get("function") if isinstance(call, dict) else None
        fn = fn if isinstance(fn, dict) else {}
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        cmd_id = call.get("id") if isinstance(call, dict) and isinstance(call.get("id"), str) else f"tool{n}"
        lines.append(json.dumps({"cmd_id": cmd_id[:64], "type": fn.get("name"), "args": args}, ensure_ascii=False))
    return "\n# Commands:\n" + "\n".join(lines) + "\n# End of commands\n"
