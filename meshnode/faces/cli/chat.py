"""``meshnode chat``: talk with the agent from a terminal, as the notebook's conversation page does.

    meshnode chat [--thread T] TEXT   a new conversation, or one more message in thread T
    meshnode chat list                the conversations, most recently active first
    meshnode chat show T              one conversation, oldest message first

All three go through the running node's control socket (``meshnode/store/chat.py``
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


def _limit(args, default: int) -> int:
    limit = default if args.limit is None else args.limit
    if not 1 <= limit <= 500:
        raise MeshnodeError("bad_limit", "--limit must be between 1 and 500")
    return limit


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _list(args) -> int:
    rows = _ask_node(_config(args), "chat_threads", {"limit": _limit(args, 50)})
    print_rows(args, rows, lambda r: (
        f"{r['thread']}  {_when(r['last_ms'])}  {r['count']:3} msg"
        + (f", {r['unread_by_agent']} unread by the agent" if r["unread_by_agent"] else "")
        + f"  {r['title'].splitlines()[0] if r['title'].strip() else ''}"
        + f"\n    last ({r['last_side']}): {' '.join(r['last_text'].split())[:100]}"))
    return 0


def _show(args, thread: str) -> int:
    out = _ask_node(_config(args), "chat_thread", {"thread": thread, "limit": _limit(args, 100)})
    if args.json:
        print_json(out)
        return 0
    for m in out["messages"]:
        who = "you" if m["side"] == "person" else "agent"
        flag = "" if m["read"] or m["side"] == "agent" else "  (not read by the agent yet)"
        print(terminal_safe(f"[{_when(m['time_ms'])}] {who}{flag}:"))
        print(terminal_safe("    " + m["text"].replace("\n", "\n    "), keep_newlines=True))
    return 0
