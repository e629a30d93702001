"""A2A 0.3 clients on the wire (issue 33): the requests a real a2a-sdk 0.3.26 client sent a node
(tests/golden/a2a_v03, recorded by its record.py) replayed against a node, and each answer parsed with
the 0.3 types a2a-sdk 1.x keeps (``a2a.compat.v0_3.types``), as that client parses them: the card at
both paths, message/send as a known party and tasks/get, message/send and message/stream as an
unknown party (held), and a stranger's message/stream past its share of the held queue refused
as message/send is (HTTP 429 with Retry-After). The 1.x client end to end: tests/test_a2a.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

GOLDEN = Path(__file__).resolve().parent / "golden" / "a2a_v03"
PLACEHOLDERS = ("REQUEST_ID", "MESSAGE_ID", "TOKEN", "TASK_ID")


def recorded(name: str, **fill: str) -> dict:
    """The exchange ``name`` as recorded, its placeholders filled: fresh ids, and ``fill``'s (TOKEN,
    TASK_ID); a placeholder left unfilled fails the test rather than going out as it is."""
    text = (GOLDEN / f"{name}.json").read_text()
    for placeholder, value in {"REQUEST_ID": str(uuid.uuid4()), "MESSAGE_ID": uuid.uuid4().hex, **fill}.items():
        text = text.replace(placeholder, value)
    assert not [p for p in PLACEHOLDERS if p in text], (name, text)
    exchange = json.loads(text)
    assert exchange["recorded_with"].startswith("a2a-sdk 0.3.") and exchange["status"] == 200
    return exchange


def replay(url: str, exchange: dict, source: str = "127.0.0.1") -> httpx.Response:
    """The recorded request, its headers and body as the 0.3 client sent them, from loopback ``source``."""
    body = exchange["json"]
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=60) as http:
        return http.request(exchange["method"], url + exchange["path"], headers=exchange["headers"],
                            content=None if body is None else json.dumps(body).encode())


def streamed(response: httpx.Response) -> list[dict]:
    """The JSON-RPC responses of a server-sent event stream's ``data:`` lines."""
    assert response.headers["content-type"].startswith("text/event-stream"), response.text
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


@pytest.fixture
def node(tmp_path):
    from meshharness import Node

    node = Node(tmp_path, "ada", env={"MESHNODE_A2A_BURST": "10"})
    token = node.cli("a2a", "token", "add", "friend").strip()
    try:
        node.start()
        yield node, token
    finally:
        node.kill()


def test_the_requests_of_a_real_0_3_client_are_answered_as_it_reads_them(node):
    from a2a.compat.v0_3 import types as v03

    node, token = node
    url = node.web_url.rstrip("/")
    cards = [replay(url, recorded(name)) for name in ("card_new", "card_old")]
    assert [c.status_code for c in cards] == [200, 200] and cards[0].json() == cards[1].json()
    card = v03.AgentCard.model_validate(cards[1].json())
    assert card.url == url + "/a2a" and card.protocol_version == "0.3.0" and card.preferred_transport == "JSONRPC"

    # a known party (its token; non-blocking: the task at once), then tasks/get of it
    sent = replay(url, recorded("message_send", TOKEN=token))
    answer = v03.SendMessageResponse.model_validate(sent.json()).root
    assert sent.status_code == 200 and isinstance(answer, v03.SendMessageSuccessResponse), sent.text
    task = answer.result
    assert isinstance(task, v03.Task) and task.id.startswith("m-") and task.status.state == v03.TaskState.working
    got = v03.GetTaskResponse.model_validate(replay(url, recorded("tasks_get", TOKEN=token, TASK_ID=task.id)).json())
    assert isinstance(got.root, v03.GetTaskSuccessResponse) and got.root.result.id == task.id
    assert got.root.result.context_id == task.context_id and task.context_id

    # an unknown party: held, its task with a context; tasks/get from its address finds it
    sent = replay(url, recorded("message_send_unknown"), source="127.0.1.1")
    held = v03.SendMessageResponse.model_validate(sent.json()).root.result
    assert isinstance(held, v03.Task) and held.id.startswith("h-") and held.status.state == v03.TaskState.submitted
    assert held.context_id.startswith("a2a-")
    got = v03.GetTaskResponse.model_validate(replay(url, recorded("tasks_get_unknown", TASK_ID=held.id),
                                                    source="127.0.1.1").json()).root
    assert isinstance(got, v03.GetTaskSuccessResponse) and got.result.context_id == held.context_id
    # ... and its message/stream: one event, the held task
    events = streamed(replay(url, recorded("message_stream_unknown"), source="127.0.2.1"))
    [event] = [v03.SendStreamingMessageResponse.model_validate(e).root for e in events]
    assert isinstance(event, v03.SendStreamingMessageSuccessResponse), events
    assert event.result.id.startswith("h-") and event.result.status.state == v03.TaskState.submitted


def test_a_strangers_stream_past_its_share_is_refused_with_429_and_retry_after_as_a_send_is(node):
    """message/stream (0.3) and SendStreamingMessage (1.0) from an unknown party whose share of the held
    queue is full: HTTP 429 ``held_full`` with Retry-After, before anything is streamed."""
    from a2a.compat.v0_3 import types as v03

    node, _ = node
    url = node.web_url.rstrip("/")
    statuses = []
    for i in range(2):  # [a2a] held_per_party: 2 of one party wait at once
        exchange = recorded("message_stream_unknown")
        exchange["json"]["params"]["message"]["parts"][0]["text"] = f"stream {i}"
        statuses.append(replay(url, exchange).status_code)
    assert statuses == [200, 200]
    refused = [replay(url, recorded(name)) for name in ("message_stream_unknown", "message_send_unknown")]
    new = recorded("message_stream_unknown")
    new["json"]["method"] = "SendStreamingMessage"  # the 1.0 name, in the 1.0 shape
    new["json"]["params"] = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [
        {"text": "a 1.0 stream"}], "metadata": {"sender": "did:key:zOldClient"}}}
    refused.append(replay(url, new))
    for response in refused:
        assert response.status_code == 429, response.text
        assert response.headers["content-type"].startswith("application/json")  # not a stream
        error = v03.JSONRPCErrorResponse.model_validate(response.json()).error
        assert error.data == {"type": "held_full", "share": "party",
                              "retry_after_s": int(response.headers["retry-after"])}
        assert 60 <= int(response.headers["retry-after"]) <= 600 and "minute" in error.message
