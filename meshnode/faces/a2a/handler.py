"""The A2A request handler on trio (protocols/a2a.md section 3): a2a-sdk's ``RequestHandler``
interface, implemented on the node's own services instead of the SDK's ``DefaultRequestHandler``
(whose event queues and tasks are asyncio's, which the node's trio loop cannot run).

``message/send`` is the control command ``chat_send``: the text goes into the agent's conversation
and the agent's replies come back (waiting up to ``[a2a] wait_seconds``). An A2A ``contextId`` maps to
one chat thread per party. A message with no reply in time is a task ``m-<note DID>`` (WORKING until
the agent answers, then COMPLETED with the answer); a message held for a person's approval is a task
``h-<confirmation number>-<nonce>`` (SUBMITTED while it waits, REJECTED if refused or expired, then as its
delivered message). Tasks are read back from the store, so they outlive a restart. The context map
lives in memory; a contextId that is the id of a thread the same party started (its first message's
provenance row names the party) is recognised from the store, so the default contextIds outlive a restart.
The text goes in as the party wrote it: who sent it is the note's provenance row (actor ``a2a``, the
party's key and name), which the agent's prompt shows in the parties' own section.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import Message, SendMessageRequest, Task, TaskStatusUpdateEvent
from a2a.utils.errors import (InvalidParamsError, InvalidRequestError, PushNotificationNotSupportedError, TaskNotCancelableError,
                              TaskNotFoundError, UnsupportedOperationError)

from meshnode.store import chat
from meshnode.faces.a2a import gmp_tasks, held
from meshnode.faces.a2a.admission import Party, shares_of
from meshnode.faces.a2a.delivery import Conversations
from meshnode.base.config.a2a import A2ASettings
from meshnode.faces.a2a.tasks import message_task, reply_message

MAX_CONTEXT_ID = 200


class MeshRequestHandler(RequestHandler):
    """Answers the JSON-RPC calls; delivers through ``conversations`` (the face's, which also runs the
    delivery of approved messages from the start; a handler of its own when none is given)."""

    def __init__(self, services, settings: A2ASettings, conversations: Conversations | None = None):
        self.services, self.settings = services, settings
        self.conversations = conversations or Conversations(services, settings)

    # --- messages ------------------------------------------------------------------------------
    def _text(self, params: SendMessageRequest) -> str:
        message = params.message
        if not message.parts:
            raise InvalidParamsError(message="the message has no parts")
        texts = [p.text for p in message.parts if p.WhichOneof("content") == "text"]
        if len(texts) != len(message.parts):
            raise InvalidParamsError(message="only text parts are accepted (text/plain)")
        text = "\n".join(texts).strip()
        if not text:
            raise InvalidParamsError(message="the message's text is empty")
        if len(text) > self.settings.max_text_chars:
            raise InvalidParamsError(message=f"the message is longer than {self.settings.max_text_chars} characters")
        if len(message.context_id) > MAX_CONTEXT_ID:
            raise InvalidParamsError(message=f"contextId is longer than {MAX_CONTEXT_ID} characters")
        return text

    def _checked_text(self, params: SendMessageRequest) -> str:
        try:
            return self._text(params)
        except InvalidParamsError:
            self.services.metrics.inc("a2a_messages", outcome="refused")
            raise

    async def on_message_send(self, params: SendMessageRequest, context=None) -> Task | Message:
        party: Party = context.state["party"]
        text = self._checked_text(params)
        goal = gmp_tasks.goal_of(params.message)
        if goal is not None:
            if not party.known:
                self.services.metrics.inc("a2a_messages", outcome="refused")
                raise InvalidParamsError(message="only known parties make GMP tasks (metadata.goal)")
            self.services.metrics.inc("a2a_messages", outcome="gmp_task")
            return await gmp_tasks.create(self.services, party, goal, text, held.framed(party, text))
        context_id = params.message.context_id
        if not party.known and self.settings.approve_unknown:
            row = await self.services.write(held.hold, party, text, context_id, self.services.now(),
                                            int(self.settings.approval_hours * 3600 * 1000), self.conversations.nonce_key(),
                                            shares_of(self.settings))
            if row is None:  # the face refuses this with 429 first; here when many raced past it
                self.services.metrics.inc("a2a_messages", outcome="held_full")
                raise InvalidRequestError(message=held.HELD_FULL)
            self.services.metrics.inc("a2a_messages", outcome="held")
            return held.task_of(row, None)
        wait = 0.0 if params.configuration.return_immediately else self.settings.wait_seconds
        out = await self.conversations.deliver(party.key, party.name, text, context_id, wait)
        self.services.metrics.inc("a2a_messages", outcome="delivered")
        if out.get("replies"):
            return reply_message(out["replies"], out["context_id"], out["did"])
        return message_task(out["did"], out["context_id"], [])

    async def on_message_send_stream(self, params: SendMessageRequest, context=None) -> AsyncGenerator:
        """The task at once, then its completion when the agent answers (the stream ends after
        ``wait_seconds`` without an answer: tasks/get finds it later)."""
        party: Party = context.state["party"]
        text = self._checked_text(params)
        held_or_gmp = not party.known and self.settings.approve_unknown or gmp_tasks.goal_of(params.message)
        if held_or_gmp:  # nothing to stream: the task as it stands
            yield await self.on_message_send(params, context)
            return
        out = await self.conversations.deliver(party.key, party.name, text, params.message.context_id, 0.0)
        self.services.metrics.inc("a2a_messages", outcome="delivered")
        task = message_task(out["did"], out["context_id"], [])
        yield task
        replies = await chat.wait_for_reply(self.services.store, self.services.key.did, out["did"],
                                            self.settings.wait_seconds)
        if replies:
            done = message_task(out["did"], out["context_id"], replies)
            yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=done.status)

    # --- tasks ---------------------------------------------------------------------------------
    async def on_get_task(self, params, context=None) -> Task | None:
        party: Party = context.state["party"]
        task_id = params.id
        if task_id.startswith("m-"):
            did = task_id[2:]
            if not did.startswith(chat.PREFIX) or len(did) > 200:
                raise TaskNotFoundError(message=f"no task {task_id[:100]}")
            found = await self.services.read(held.message_status, self.services.key.did, did, party)
            if found is None:
                raise TaskNotFoundError(message=f"no task {task_id[:100]}")
            return message_task(did, found["thread"], found["replies"])
        if task_id.startswith("h-"):
            number, nonce = held.parse_task_id(task_id) or (0, "")
            row = await self.services.read(held.row, number) if number else None
            if not held.owned_by(row, nonce, party):
                raise TaskNotFoundError(message=f"no task {task_id[:100]}")
            replies = None
            if row["status"] == "done":
                replies = await self.services.read(chat.replies_to, self.services.key.did, row["result"]["did"])
            return held.task_of(row, replies)
        if task_id.startswith(gmp_tasks.PREFIX):
            return await gmp_tasks.get(self.services, party, task_id)
        raise TaskNotFoundError(message=f"no task {task_id[:100]}")

    async def on_cancel_task(self, params, context=None) -> Task | None:
        raise TaskNotCancelableError(message="a message given to the agent is not taken back; a held one"
                                             " expires unless a person approves it")

    async def on_list_tasks(self, params, context=None):
        raise UnsupportedOperationError(message="tasks are not listed; ask for one with tasks/get")

    async def on_subscribe_to_task(self, params, context=None):
        raise UnsupportedOperationError(message="subscribe is not offered; use tasks/get")
        yield  # an async generator, as the interface has it

    async def on_create_task_push_notification_config(self, params, context=None):
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(self, params, context=None):
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(self, params, context=None):
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(self, params, context=None):
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(self, params, context=None):
        raise UnsupportedOperationError(message="there is no extended card: the public one is all")
