"""What a woken agent may send out of the node (protocols/reactor.md 6.2 item 6).

During a wake tick (the cycle's wake slot has a focus) every send that leaves the node passes these
limits, then the gate's ``outbound`` check (``cognition/sending.py``): the node gives them to the
cycle. In a wake run: no broadcast (a public note: a topic for everyone), at most
``max_outgoing_per_run`` sends per run, and a message to one agent within the reactor's per
source+target+thread window (``Reactor.may_send``, ``thread_messages_per_hour``). A refusal is a
MeshnodeError the LLM sees as the command's error; outside wakes nothing changes.
"""

from __future__ import annotations

from typing import Callable

from meshnode.base.errors import MeshnodeError


class WakeSendRefused(MeshnodeError):
    """A send a woken agent may not make now; the reason says which limit."""


class WakeSendLimits:
    """``reactor``: the reactor now (None while none runs): it keeps the per-thread window."""

    def __init__(self, self_did: str, max_per_run: int, clock: Callable[[], int],
                 reactor: Callable[[], object | None] = lambda: None, metrics=None):
        self.self_did, self.max_per_run, self.clock, self.reactor, self.metrics = \
            self_did, max_per_run, clock, reactor, metrics
        self._sent: dict[str, int] = {}  # job id -> sends so far in its run

    def check(self, wakes, tool: str, args: dict) -> None:
        """Refuse (WakeSendRefused) a send past the limits of the wake ``wakes`` (the cycle's slot)
        runs now; outside a wake, nothing."""
        if wakes.focus is not None:
            self._check(wakes.status()["job_id"], tool, args)

    def _check(self, job_id: str, tool: str, args: dict) -> None:
        if tool == "note_add" and args.get("audience") == "public":
            self._refuse("broadcast", "no broadcast during a reactor wake: write to one agent (send_message)")
        sent = self._sent.get(job_id, 0)
        if sent >= self.max_per_run:
            self._refuse("per_run", f"this wake has sent {sent} message(s), the most a run may"
                                    " ([reactor] max_outgoing_per_run)")
        reactor = self.reactor()
        if tool == "send_message" and reactor is not None:
            to, thread = str(args.get("to", "")), str(args.get("topic") or args.get("thread") or "")
            if not reactor.may_send(self.self_did, to, thread, self.clock()):
                self._refuse("per_thread", f"enough messages to {to[:80]} in this thread for this hour"
                                           " ([reactor] thread_messages_per_hour)")
        self._sent = {job_id: sent + 1}  # only the running job's count is kept

    def _refuse(self, limit: str, why: str) -> None:
        if self.metrics is not None:
            self.metrics.inc("reactor_sends_refused_total", limit=limit)
        raise WakeSendRefused("reactor_send_limit", why)
