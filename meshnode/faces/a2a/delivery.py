"""Messages into the agent's conversation for the A2A face, without a2a-sdk: each party's contexts
mapped to chat threads, and the loop that delivers the held messages a person approved.

The loop runs from the web server's start; the JSON-RPC handler (``handler.py``, on a2a-sdk) is built
at the first request that needs it and delivers through the same ``Conversations``, so a party's
context keeps its thread whichever of the two delivered first.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections import OrderedDict

import trio

from meshnode.faces.a2a import held
from meshnode.app import actor
from meshnode.base.config.a2a import A2ASettings
from meshnode.records.a2a.blocks import DROPPED

log = logging.getLogger("meshnode.faces.a2a")
MAX_CONTEXTS = 4096
DELIVER_SECONDS = 30  # an approved message's delivery (chat_send, no wait) before it counts as failed


class Conversations:
    def __init__(self, services, settings: A2ASettings, blocked=None):
        """``blocked(names, client)``: the block that stops a party (records.a2a.blocks.BlockSet.match;
        None: nothing is blocked): an approved message of a party blocked since is dropped, not delivered."""
        self.services, self.settings, self.blocked = services, settings, blocked
        self._threads: OrderedDict[tuple[str, str], str] = OrderedDict()  # (party key, contextId) -> tid
        self._waiting: set[int] = set()  # held messages pending at the last round (their end is counted)

    def nonce_key(self) -> bytes:
        return hmac.new(self.services.key.seed(), b"meshnode a2a held task nonce", hashlib.sha256).digest()

    def thread_of(self, party_key: str, context_id: str) -> str | None:
        return self._threads.get((party_key, context_id)) if context_id else None

    def remember(self, party_key: str, context_id: str, tid: str) -> None:
        self._threads[(party_key, context_id)] = tid
        self._threads.move_to_end((party_key, context_id))
        while len(self._threads) > MAX_CONTEXTS:
            self._threads.popitem(last=False)

    async def deliver(self, party_key: str, label: str, text: str, context_id: str, wait: float) -> dict:
        """``chat_send`` of the party's ``text`` as it wrote it, for actor ``a2a(party_key, label)`` (who
        sent it is the note's provenance row, never a line of its text), into the party's thread for
        ``context_id`` (a new one at first); the context the client uses next (its own, or the thread's
        id when it gave none)."""
        tid = self.thread_of(party_key, context_id)
        if tid is None and context_id and await self.services.read(held.started_by, self.services.key.did,
                                                                   context_id, party_key):
            tid = context_id  # a thread this party started, named by its id (after a restart too)
        out = await self.services.call("chat_send", actor=actor.a2a(party_key, label), text=text, thread=tid,
                                       wait_seconds=wait)
        context_id = context_id or out["thread"]
        self.remember(party_key, context_id, out["thread"])
        return {**out, "context_id": context_id}

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
                await self.deliver_round()
            except Exception:
                log.exception("a2a: delivering approved messages failed; trying again")
                self.services.metrics.inc("a2a_delivery_errors")
            await trio.sleep(poll_s)

    async def deliver_round(self) -> None:
        """One look: the held messages that ended are counted, the approved ones delivered."""
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
        if self.blocked is not None and self.blocked((args.get("sender", ""), args.get("party", "")),
                                                     args.get("client", "")) is not None:
            self.services.metrics.inc("a2a_messages", outcome="blocked")
            self.services.metrics.inc("a2a_dropped", reason="blocked")
            await self.services.write(held.finish, row["id"], False, {"error": DROPPED})
            return
        with trio.move_on_after(DELIVER_SECONDS):
            try:
                out = await self.deliver(args["party"], args.get("sender", ""), held.text_of(args),
                                         args.get("context_id", ""), 0.0)
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
