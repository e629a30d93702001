"""The conversation page's routes (protocols/web.md 7): threads of the person's messages and the
agent's replies, and the person's hand on a thread (rename, archive, delete). Every handler is a
control command (``meshnode chat`` calls the same ones); a message's text comes with its ``html``
(Markdown rendered and sanitized by ``markdown.to_html``: the page inserts it as it is)."""

from __future__ import annotations

from meshnode.store.chat import TID_LEN
from meshnode.store.chat_control import MAX_TITLE
from meshnode.domain.notes import MAX_TEXT
from meshnode.faces.web import ids
from meshnode.faces.web.endpoint import Arg, Endpoint
from meshnode.faces.web.markdown import to_html

_PAGE = {"limit": ids.limit("threads"),
         "before": Arg(int, min=0, doc="last_ms of the last thread of the previous page"),
         "archived": Arg(bool, default=False, doc="the archived conversations instead")}
_THREAD = Arg(str, required=True, max=TID_LEN, doc="the thread id (16 characters of its first message's DID)")
_TEXT = Arg(str, required=True, max=MAX_TEXT, doc="the message")


async def threads(services, args):
    return await services.call("chat_threads", limit=args["limit"], before=args["before"], archived=args["archived"])


async def thread(services, args):
    out = await services.call("chat_thread", thread=args["thread"], limit=args["limit"], before=args["before"])
    return {**out, "messages": [{**m, "html": to_html(m["text"])} for m in out["messages"]]}


async def send(services, args):
    return await services.call("chat_send", text=args["text"], thread=args.get("thread"))


async def rename(services, args):
    return await services.call("chat_thread_rename", thread=args["thread"], title=args["title"])


async def archive(services, args):
    return await services.call("chat_thread_archive", thread=args["thread"], archived=args["archived"])


async def delete(services, args):
    return await services.call("chat_thread_delete", thread=args["thread"])


ROUTES = [
    Endpoint("GET", "/api/threads", threads, _PAGE,
             doc="conversations, most recently active first: [{thread, title, last_side, last_text, last_ms,"
                 " unread_by_agent, count, archived}]"),
    Endpoint("GET", "/api/threads/{thread}", thread,
             {"thread": _THREAD, "limit": ids.limit("messages", 100),
              "before": Arg(int, min=0, doc="time_ms of the oldest message of the previous page")},
             doc="one conversation, oldest first: {thread, title, renamed, archived, messages: [{did, side"
                 " (person|agent|party), from (its sender's kind), name, who, text, html, time_ms, read, seen"
                 " ({prompts, first_tick, last_tick} or null), answered (replies), in_reply_to, replying_to"
                 " [{did, side, who, words}]}], agent: {mode, paused, paused_by, idle, last_error, asking}}"),
    Endpoint("POST", "/api/threads", send, {"text": _TEXT},
             doc="start a conversation: {thread, did, woke} (woke: the agent ticks now; not while paused)"),
    Endpoint("POST", "/api/threads/{thread}", send, {"thread": _THREAD, "text": _TEXT},
             doc="one more message in a conversation: {thread, did, woke}"),
    Endpoint("POST", "/api/threads/{thread}/rename", rename,
             {"thread": _THREAD, "title": Arg(str, required=True, max=MAX_TITLE, doc="the new title (\"\": its"
                                                                                       " first words again)")},
             doc="give a conversation its own title: {thread, title}"),
    Endpoint("POST", "/api/threads/{thread}/archive", archive,
             {"thread": _THREAD, "archived": Arg(bool, default=True, doc="false brings it back")},
             doc="archive a conversation (out of the list and the agent's prompt), or bring it back:"
                 " {thread, archived}"),
    Endpoint("POST", "/api/threads/{thread}/delete", delete, {"thread": _THREAD},
             doc="delete a conversation: its messages hidden, out of the agent's prompt: {thread, deleted, messages}"),
]
