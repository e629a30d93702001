"""When an agent cannot think: what becomes of a signal that would have woken it (issue 35, 3).

A node with no LLM configured has a core that cannot answer. Woken, it would fail, and the ladder
would escalate the failure to the person minutes later as a "Reactor escalation". Instead the
core (``core.py``) is told which local agents are off (``AgentsOff``, each step: the driver reads
the LLM registry, the core reads no store) and routes a signal that would wake one of them here:

- a signal for the person: ``to_person`` (the event goes to ``Step.for_person``; the driver keeps
  it as ONE plain line in the person's inbox; nothing is woken, so nothing fails or escalates);
- a signal that only makes sense to an agent that thinks: ``agent_off``, nothing for anyone:
  the person's own notes and chat messages (they wrote them), a reminder that a thread is still
  unanswered (its note was already a line of its own), the agent's scheduled self-check.

Both close the event (status ``done``): it is not pending, so adding an LLM later does not
replay a backlog of stale wakes; signals after that wake the agent as before. Pure.
"""

from __future__ import annotations

from meshnode.engines.reactor.types import Event

# signals that mean something only to an agent that thinks: dropped with a word, never a line
AGENT_ONLY_TYPES = frozenset({"thread.unanswered", "self.check"})
PERSON = "person"  # a note's ``refs["by"]`` when the person wrote it (store.speakers kind)


def for_person(e: Event) -> tuple[bool, str]:
    """(whether ``e`` becomes a line in the person's inbox, why), for a signal that would wake an
    agent that is off."""
    if e.refs.get("by") == PERSON:
        return False, "the person's own: nothing to tell them"
    if e.event_type in AGENT_ONLY_TYPES:
        return False, f"{e.event_type} is for an agent that thinks"
    return True, "one line in the person's inbox"
