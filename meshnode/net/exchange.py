"""Container exchange (HMP MCE) as a libp2p request/response protocol.

``/meshnode/mce/1.0.0``: one request per stream, one response, both a single
varint-framed deterministic-CBOR map:

    {"op": "fetch", "dids": [container DID, ...]}        ->  {"op": "found", "containers": [bytes], "missing": [DID]}
    {"op": "push", "containers": [container bytes, ...]} ->  {"op": "ack", "accepted": [DID], "duplicates": [DID],
                                                              "pending": [DID] (GMP, held aside: it names what
                                                              this node lacks; absent from older nodes),
                                                              "rejected": [{"index": i, "code": c, "reason": r}],
                                                              "retry_ms": ms (when some were refused for load)}
    {"op": "validate", "prompt": text, "answer": text}    ->  {"op": "verdict", "rating": -3..3, "comment": text}
    any                                                  ->  {"op": "error", "code": c, "reason": r}

Every container a peer pushes is verified before it is stored; every
rejection is counted against the peer (standing) and in metrics; a busy node
answers ``error/busy`` rather than queueing without bound, and a peer over its
CPU budget ``error/over_budget``, both with ``retry_ms``, a hint in milliseconds.
A push refused in part for load says so in its ack's ``retry_ms``; a peer that
pushes again before a hint has elapsed is refused ``busy`` and, when it keeps
doing so, cut off (``retry_hints``).
"""

from __future__ import annotations

from typing import Any

from meshnode.base.container import ContainerError, cbor
from meshnode.base.errors import MeshnodeError

PROTOCOL_ID = "/meshnode/mce/1.0.0"
MAX_ITEMS = 64
MAX_VALIDATE_CHARS = 32 * 1024  # a prompt or an answer sent for validation (the sender cuts longer ones)
MAX_MESSAGE_DEPTH = 8  # the message map, its arrays, the rejection maps; containers travel as bytes
# Data items in one message. The largest an honest node sends is an ack for 64 containers: 64 DIDs
# accepted or duplicate and 64 rejection maps of 7 items each, under 700 in all (a push of 64
# containers is 70: they travel as byte strings). The limit bounds a frame's decode whatever its
# size: a 1 MiB frame of empty arrays would otherwise be a million items (over a second of CPU).
MAX_MESSAGE_ITEMS = 2048


class ExchangeError(MeshnodeError):
    """A malformed or refused exchange message."""


def encode_message(message: dict) -> bytes:
    return cbor.encode(message)


def decode_message(data: bytes, max_bytes: int) -> dict:
    try:
        message, _ = cbor.decode(data, max_bytes=max_bytes, max_depth=MAX_MESSAGE_DEPTH, max_items=MAX_MESSAGE_ITEMS)
    except ContainerError as exc:
        raise ExchangeError("bad_message", f"{exc.code}: {exc.reason}") from None
    if type(message) is not dict or type(message.get("op")) is not str:
        raise ExchangeError("bad_message", "an exchange message is a map with a text 'op'")
    return message


def parse_request(message: dict) -> tuple[str, list]:
    op = message["op"]
    if op == "fetch":
        dids = message.get("dids")
        if type(dids) is not list or not dids or len(dids) > MAX_ITEMS or any(
                type(d) is not str or len(d) > 128 for d in dids):
            raise ExchangeError("bad_request", f"fetch needs 1 to {MAX_ITEMS} container DIDs")
        return op, dids
    if op == "push":
        items = message.get("containers")
        if type(items) is not list or not items or len(items) > MAX_ITEMS or any(type(x) is not bytes for x in items):
            raise ExchangeError("bad_request", f"push needs 1 to {MAX_ITEMS} containers as byte strings")
        return op, items
    if op == "validate":  # a peer's cognitive core asks this node's validator LLM for a verdict
        prompt, answer = message.get("prompt"), message.get("answer")
        if type(prompt) is not str or type(answer) is not str or not answer or \
                len(prompt) > MAX_VALIDATE_CHARS or len(answer) > MAX_VALIDATE_CHARS:
            raise ExchangeError("bad_request", f"validate needs a prompt and an answer of at most {MAX_VALIDATE_CHARS}"
                                " characters each")
        return op, [prompt, answer]
    raise ExchangeError("bad_request", f"unknown op {op[:40]!r}")


def found(containers: list[bytes], missing: list[str]) -> dict:
    return {"op": "found", "containers": containers, "missing": missing}


def ack(accepted: list[str], duplicates: list[str], rejected: list[dict], retry_ms: int | None = None,
        pending: list[str] = ()) -> dict:
    """A push's answer; ``pending``: GMP containers held aside until what they name arrives (neither
    admitted nor duplicates); ``retry_ms`` when some of it was refused for load: push again after that."""
    message = {"op": "ack", "accepted": accepted, "duplicates": duplicates, "rejected": rejected}
    if pending:
        message["pending"] = list(pending)
    if retry_ms is not None:
        message["retry_ms"] = int(retry_ms)
    return message


def verdict(rating: int, comment: str) -> dict:
    return {"op": "verdict", "rating": rating, "comment": comment[:100]}


def error(code: str, reason: str, retry_ms: int | None = None) -> dict:
    """An error answer; a refusal for load (``busy``, ``over_budget``) says when to try again."""
    message = {"op": "error", "code": code, "reason": reason[:200]}
    if retry_ms is not None:
        message["retry_ms"] = int(retry_ms)
    return message


def check_response(message: dict, expected_op: str) -> dict[str, Any]:
    """A response of the expected kind, or ExchangeError (also for an error response)."""
    if message["op"] == "error":
        raise ExchangeError(str(message.get("code", "error"))[:40], str(message.get("reason", ""))[:200])
    if message["op"] != expected_op:
        raise ExchangeError("bad_response", f"expected {expected_op}, got {message['op'][:40]!r}")
    if expected_op == "found":
        if type(message.get("containers")) is not list or type(message.get("missing")) is not list:
            raise ExchangeError("bad_response", "found needs containers and missing")
    if expected_op == "verdict":
        rating, comment = message.get("rating"), message.get("comment")
        if type(rating) is not int or not -3 <= rating <= 3 or type(comment) is not str or len(comment) > 100:
            raise ExchangeError("bad_response", "a verdict is a rating from -3 to 3 and a comment of at most 100 characters")
    if expected_op == "ack":
        for key in ("accepted", "duplicates", "rejected"):
            if type(message.get(key)) is not list:
                raise ExchangeError("bad_response", f"ack needs {key}")
        if type(message.setdefault("pending", [])) is not list:  # absent from nodes that predate it
            raise ExchangeError("bad_response", "an ack's pending is a list")
    return message
