"""``meshnode chat``: talk with the agent from a terminal, as the notebook's conversation page does.

    meshnode chat [--thread T] TEXT   a new conversation, or one more message in thread T
    meshnode chat list                the conversations, most recently active first
    meshnode chat show T              one conversation, oldest message first
    meshnode chat thread rename T TITLE | archive T | unarchive T | delete T
                                      the person's hand on a conversation (an archived or deleted one
                                      leaves the agent's prompt)

All of them go through the running node's control socket (``meshnode/store/chat.py``
behind it): a message wakes the agent, which needs the node.
"""

from __future__ import annotations

import time

from meshnode.faces.cli.common import _ask_node, _config, print_json, print_rows, terminal_safe
from meshnode.base.errors import MeshnodeError


def cmd_chat(args) -> int:
    words = args.words
    if args.message is None and words[:1] == ["list"] and len(words) == 1:
        return _list(args)
    if args.message is None and words[:1] == ["show"] and len(words) == 2:
        return _show(args, words[1])
    if args.message is None and words[:1] == ["thread"] and len(words) >= 3 and words[1] in _THREAD_VERBS:
        return _thread(args, words[1], words[2], words[3:])
    text = args.message if args.message is not None else " ".join(words)
    if args.message is not None and words:
        raise MeshnodeError("bad_arguments", "give the message either with -m or as TEXT, not both")
    if not text.strip():
        raise MeshnodeError("empty_note", "a message needs some text: meshnode chat 'TEXT'")
    out = _ask_node(_config(args), "chat_send", {"text": text, "thread": args.thread})
    if args.json:
        print_json(out)
        return 0
    print(f"thread {out['thread']}: sent {out['did']}")
    if not out["woke"]:
        print("(the agent sees it at its next tick; if it is paused, once a person resumes it)")
    return 0


_THREAD_VERBS = ("rename", "archive", "unarchive", "delete")


def _thread(args, verb: str, thread: str, rest: list[str]) -> int:
    if verb == "rename":
        out = _ask_node(_config(args), "chat_thread_rename", {"thread": thread, "title": " ".join(rest)})
        said = f"thread {thread} is now {out['title']!r}" if out["title"] else f"thread {thread} has its first words back"
    elif rest:
        raise MeshnodeError("bad_arguments", f"meshnode chat thread {verb} takes only a thread id")
    elif verb == "delete":
        out = _ask_node(_config(args), "chat_thread_delete", {"thread": thread})
        said = f"thread {thread} deleted ({out['messages']} messages hidden; the agent no longer sees them)"
    else:
        out = _ask_node(_config(args), "chat_thread_archive", {"thread": thread, "archived": verb == "archive"})
        said = (f"thread {thread} archived: out of `meshnode chat list` (see --archived) and the agent's prompt"
                if out["archived"] else f"thread {thread} is back in the list and the agent's prompt")
    if args.json:
        print_json(out)
    else:
        print(terminal_safe(said))
    return 0


def _limit(args, default: int) -> int:
    limit = default if args.limit is None else args.limit
    if not 1 <= limit <= 500:
        raise MeshnodeError("bad_limit", "--limit must be between 1 and 500")
    return limit


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _list(args) -> int:
    rows = _ask_node(_config(args), "chat_threads", {"limit": _limit(args, 50), "archived": bool(args.archived)})
    print_rows(args, rows, lambda r: (
        f"{r['thread']}  {_when(r['last_ms'])}  {r['count']:3} msg"
        + (f", {r['unread_by_agent']} unread by the agent" if r["unread_by_agent"] else "")
        + f"  {r['title'].splitlines()[0] if r['title'].strip() else ''}"
        + f"\n    last ({r['last_side']}): {' '.join(r['last_text'].split())[:100]}"))
    return 0


def _state(m: dict) -> str:
    """A message's state in words: answered, seen by the agent (in how many prompts), or not yet."""
    if m.get("answered"):
        return "answered"
    if m.get("seen"):
        n = m["seen"]["prompts"]
        return f"seen by the agent in {n} prompt{'s' if n != 1 else ''}, not answered"
    return "read by the agent, not answered" if m["read"] else "not seen by the agent yet"


def _show(args, thread: str) -> int:
    out = _ask_node(_config(args), "chat_thread", {"thread": thread, "limit": _limit(args, 100)})
    if args.json:
        print_json(out)
        return 0
    for m in out["messages"]:
        who = {"person": "you", "agent": "agent"}.get(m["side"]) or m.get("who") or m["side"]
        flag = "" if m["side"] == "agent" else f"  ({_state(m)})"
        print(terminal_safe(f"[{_when(m['time_ms'])}] {who}{flag}:"))
        print(terminal_safe("    " + m["text"].replace("\n", "\n    "), keep_newlines=True))
    return 0
