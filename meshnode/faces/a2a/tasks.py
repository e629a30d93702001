"""The A2A tasks the handler answers with (a2a-sdk's types), made from what the store holds: a
delivered message's task ``m-<note DID>`` and a held message's ``h-<number>-<nonce>`` (held.py)."""

from __future__ import annotations

from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.struct_pb2 import Struct


def reply_message(replies: list[dict], context_id: str, asked_did: str) -> Message:
    return Message(message_id=replies[-1]["did"], context_id=context_id, role=Role.ROLE_AGENT,
                   parts=[Part(text=r["text"]) for r in replies], reference_task_ids=[f"m-{asked_did}"])


def message_task(did: str, context_id: str, replies: list[dict]) -> Task:
    """The task of a delivered message: WORKING until the agent replies, then COMPLETED with the reply."""
    if replies:
        status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED,
                            message=reply_message(replies, context_id, did))
    else:
        status = TaskStatus(state=TaskState.TASK_STATE_WORKING, message=Message(
            message_id=f"status-{did}", context_id=context_id, role=Role.ROLE_AGENT,
            parts=[Part(text="the agent has the message and answers on one of its next ticks")]))
    return Task(id=f"m-{did}", context_id=context_id, status=status)


_STATES = {"pending": (TaskState.TASK_STATE_SUBMITTED, "held for a person's approval (request {id})"),
           "approved": (TaskState.TASK_STATE_WORKING, "approved: being delivered to the agent"),
           "rejected": (TaskState.TASK_STATE_REJECTED, "a person declined to pass this message on"),
           "expired": (TaskState.TASK_STATE_REJECTED, "nobody approved this message in time"),
           "failed": (TaskState.TASK_STATE_FAILED, "approved, but it could not be delivered")}


def held_task(request: dict, task_id: str, replies: list[dict] | None) -> Task:
    """The task ``task_id`` of the held message ``request`` (a row of ``held``; ``replies``: the agent's
    replies once it was delivered): SUBMITTED while it waits, REJECTED or FAILED, then as delivered."""
    args, result = request["args"], request["result"] or {}
    if request["status"] == "done":
        context_id = args.get("context_id") or result.get("thread", "")
        task = message_task(result["did"], context_id, replies or [])
        task.id = task_id
        return task
    status = request["status"]
    if status == "failed" and result.get("error") == "interrupted while running":  # claimed: being delivered
        status = "approved"
    state, text = _STATES.get(status, _STATES["failed"])
    message = Message(message_id=f"status-{task_id}", context_id=args.get("context_id", ""),
                      role=Role.ROLE_AGENT, parts=[Part(text=text.format(id=request["id"]))])
    return Task(id=task_id, context_id=args.get("context_id", ""),
                status=TaskStatus(state=state, message=message), metadata=_meta(request))


def _meta(request: dict) -> Struct:
    meta = Struct()
    meta.update({"confirmation": request["id"], "expires_ms": request["expires_ms"]})
    return meta
