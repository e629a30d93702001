"""The A2A request handler on trio (protocols/a2a.md section 3): a2a-sdk's ``RequestHandler``
interface, implemented on the node's own services instead of the SDK's ``DefaultRequestHandler``
(whose event queues and tasks are asyncio's, which the node's trio loop cannot run).

``message/send`` is the control command ``chat_send``: the text goes into the agent's conversation
and the agent's replies come back (waiting up to ``[a2a] wait_seconds``). An A2A ``contextId`` maps to
one chat thread per party. A message with no reply in time is a task ``m-<note DID>`` (WORKING until
the agent answers, then COMPLETED with the answer); a message held for a person's approval is a task
``h-<confirmation number>-<nonce>`` (SUBMITTED while it waits, REJECTED if refused or expired, then as its
delivered message). Tasks are read back from the store, so they outlive a restart. The context map
lives in memory; a contextId that is the id of a thread the same party started (its first message
carries the party's header) is recognised from the store, so the default contextIds outlive a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator

import trio
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus,
                       TaskStatusUpdateEvent)
from a2a.utils.errors import (InvalidParamsError, InvalidRequestError, PushNotificationNotSupportedError, TaskNotCancelableError,
                              TaskNotFoundError, UnsupportedOperationError)

from meshnode import chat
from meshnode.a2a import gmp_tasks, held
from meshnode.a2a.admission import Party
from meshnode.a2a.settings import A2ASettings

log = logging.getLogger("meshnode.a2a")
MAX_CONTEXTS = 4096
MAX_CONTEXT_ID = 200
DELIVER_SECONDS = 30  # an approved message's delivery (chat_send, no wait) before it counts as failed
HELD_FULL = "held_full: too many messages of unknown parties wait for a person's approval; try again later"


class MeshRequestHandler(RequestHandler):
    def __init__(self, services, settings: A2ASettings):
        self.services, self.settings = services, settings
        self._threads: OrderedDict[tuple[str, str], str] = OrderedDict()  # (party key, contextId) -> tid
        self._waiting: set[int] = set()  # held messages pending at the last round (their end is counted)

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

    def nonce_key(self) -> bytes:
        return hmac.new(self.services.key.seed(), b"meshnode a2a held task nonce", hashlib.sha256).digest()

    def thread_of(self, party_key: str, context_id: str) -> str | None:
        return self._threads.get((party_key, context_id)) if context_id else None

    def remember(self, party_key: str, context_id: str, tid: str) -> None:
        self._threads[(party_key, context_id)] = tid
        self._threads.move_to_end((party_key, context_id))
        while len(self._threads) > MAX_CONTEXTS:
            self._threads.popitem(last=False)

    async def deliver(self, party_key: str, framed: str, context_id: str, wait: float) -> dict:
        """``chat_send`` into the party's thread for ``context_id`` (a new one at first); the context
        the client uses next (its own, or the thread's id when it gave none)."""
        tid = self.thread_of(party_key, context_id)
        if tid is None and context_id and await self.services.read(held.started_by, self.services.key.did,
                                                                   context_id, framed.split("\n", 1)[0]):
            tid = context_id  # a thread this party started, named by its id (after a restart too)
        out = await self.services.call("chat_send", text=framed, thread=tid, wait_seconds=wait)
        context_id = context_id or out["thread"]
        self.remember(party_key, context_id, out["thread"])
        return {**out, "context_id": context_id}

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
            return await gmp_tasks.create(self.services, goal, text, held.framed(party, text))
        context_id = params.message.context_id
        if not party.known and self.settings.approve_unknown:
            row = await self.services.write(held.hold, party, text, context_id, self.services.now(),
                                            int(self.settings.approval_hours * 3600 * 1000), self.nonce_key(),
                                            self.settings.max_held)
            if row is None:  # the face refuses this with 429 first; here when many raced past it
                self.services.metrics.inc("a2a_messages", outcome="held_full")
                raise InvalidRequestError(message=HELD_FULL)
            self.services.metrics.inc("a2a_messages", outcome="held")
            return held.task_of(row, None)
        wait = 0.0 if params.configuration.return_immediately else self.settings.wait_seconds
        out = await self.deliver(party.key, held.framed(party, text), context_id, wait)
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
        out = await self.deliver(party.key, held.framed(party, text), params.message.context_id, 0.0)
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
            return await gmp_tasks.get(self.services, task_id, party.known)
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

    # --- held messages, once approved ----------------------------------------------------------
    async def deliver_approved(self, poll_s: float = 1.0) -> None:
        """Forever: each held message a person approved goes into the conversation once (claimed
        first, as the gate runs approved calls, so a crash never delivers it twice). A failing round
        is logged and tried again: it must not take the web server down. First, requests a previous
        run claimed and never finished are marked failed (at most once: it may or may not have arrived)."""
        if self.services.store is None:  # a server without a store (tests): nothing is ever held
            return
        settled = await self.services.write(held.settle_interrupted)
        if settled:
            log.warning("a2a: %d approved message(s) were being delivered when the node stopped: marked failed",
                        settled)
        while True:
            try:
                await self._deliver_round()
            except Exception:
                log.exception("a2a: delivering approved messages failed; trying again")
                self.services.metrics.inc("a2a_delivery_errors")
            await trio.sleep(poll_s)

    async def _deliver_round(self) -> None:
        self._waiting, ended = await self.services.read(held.decisions, self._waiting, self.services.now())
        for outcome in ended:
            self.services.metrics.inc("a2a_messages", outcome=outcome)
        for row in await self.services.read(held.approved):
            with trio.CancelScope(shield=True):  # a shutdown waits for this row: claimed, delivered, finished
                await self._deliver_one(row)

    async def _deliver_one(self, row: dict) -> None:
        if not await self.services.write(held.claim, row["id"]):
            return
        args, result, ok = row["args"], {"error": f"not delivered within {DELIVER_SECONDS} s"}, False
        with trio.move_on_after(DELIVER_SECONDS):
            try:
                out = await self.deliver(args["party"], args["framed"], args.get("context_id", ""), 0.0)
                result, ok = {"did": out["did"], "thread": out["thread"]}, True
            except Exception as exc:  # one bad row must not stop the others
                log.warning("a2a: approved message %s not delivered: %s", row["id"], exc)
                result = {"error": str(exc)[:300]}
        self.services.metrics.inc("a2a_messages", outcome="approved" if ok else "failed")
        try:
            await self.services.write(held.finish, row["id"], ok, result)
        except Exception:  # the row stays "being delivered" until the next start settles it
            log.exception("a2a: approved message %s: its outcome could not be written", row["id"])
            self.services.metrics.inc("a2a_delivery_errors")


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
