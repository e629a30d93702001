"""The conversation page's routes (protocols/web.md 7): threads of the person's messages and the
agent's replies. Every handler is a control command (``meshnode chat`` calls the same ones)."""

from __future__ import annotations

from meshnode.store.chat import TID_LEN
from meshnode.domain.notes import MAX_TEXT
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint

_PAGE = {"limit": ids.limit("threads"),
         "before": Arg(int, min=0, doc="last_ms of the last thread of the previous page")}
_THREAD = Arg(str, required=True, max=TID_LEN, doc="the thread id (16 characters of its first message's DID)")
_TEXT = Arg(str, required=True, max=MAX_TEXT, doc="the message")


async def threads(services, args):
    return await services.call("chat_threads", limit=args["limit"], before=args["before"])


async def thread(services, args):
    return await services.call("chat_thread", thread=args["thread"], limit=args["limit"], before=args["before"])


async def send(services, args):
    return await services.call("chat_send", text=args["text"], thread=args.get("thread"))


ROUTES = [
    Endpoint("GET", "/api/threads", threads, _PAGE,
             doc="conversations, most recently active first: [{thread, title, last_side, last_text, last_ms,"
                 " unread_by_agent, count}]"),
    Endpoint("GET", "/api/threads/{thread}", thread,
             {"thread": _THREAD, "limit": ids.limit("messages", 100),
              "before": Arg(int, min=0, doc="time_ms of the oldest message of the previous page")},
             doc="one conversation, oldest first: {thread, messages: [{did, side (person|agent), text, time_ms,"
                 " read, in_reply_to}]}"),
    Endpoint("POST", "/api/threads", send, {"text": _TEXT},
             doc="start a conversation: {thread, did, woke} (woke: the agent ticks now; not while paused)"),
    Endpoint("POST", "/api/threads/{thread}", send, {"thread": _THREAD, "text": _TEXT},
             doc="one more message in a conversation: {thread, did, woke}"),
]
