"""The types of the commands over the agent's own thinking: help, memory, helper tasks, the cycle's
settings, thinking methods and their ratings, the LLMs it thinks with."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import LIMIT, LONG, TAGS, kind
from meshnode.base.container.schema import integer, mapping, number, one_of, text

_ID = {"id": (integer(0), True)}

TYPES = (
    kind("help", "detailed help for a command", {"command": (text(64), False)}, mutating=False),
    kind("llm_memory_add", "remember something", {"text": (text(LONG), True), "tags": (TAGS, False)}),
    kind("llm_memory_delete", "forget an llm_memory entry", {"id": (integer(0), True)}),
    kind("llm_task", "give another LLM a task (a one-shot question or a read-only loop); task_id hands it an"
         " existing task, e.g. a fact-check whose verdict it then gives",
         {"task_description": (text(LONG), True), "mode": (one_of("question", "read_only_loop"), False),
          "task_id": (integer(0), False),
          "target_llm": (text(64), False), "max_ticks": (integer(1, 1000), False),
          "delay_s": (number(0, 86400), False), "deadline_ms": (integer(0), False), "backoff": (number(1, 10), False)}),
    kind("cycle_settings", "change the cycle", {"responses": (integer(1, 100), False),
                                                 "pause_seconds": (number(0, 86400), False),
                                                 "concentration": (mapping, False), "idle": (mapping, False),
                                                 "mode": (one_of("auto", "manual"), False),
                                                 "notes_filter": (mapping, False)}),
    kind("methods_list", "thinking methods or stagnation strategies",
         {"kind": (one_of("thinking", "stagnation"), False)}, mutating=False),
    kind("method_add", "record a thinking method or a stagnation strategy",
         {"kind": (one_of("thinking", "stagnation"), False), "name": (text(), True),
          "description": (text(4096), True), "tags": (TAGS, False)}),
    kind("rate", "rate a thinking method or a stagnation strategy",
         {"kind": (one_of("thinking", "stagnation"), True), "id": (integer(0), True),
          "rating": (integer(-3, 3), True), "comment": (text(1024), False)}),
    kind("ratings_list", "ratings of thinking methods and stagnation strategies",
         {"target_type": (one_of("thinking_method", "stagnation_strategy"), False), **LIMIT},
         mutating=False, closed=True),
    kind("rating_delete", "withdraw a rating (its target's reputation is recomputed)", _ID, closed=True),
    kind("llm_select", "make a registered LLM the main one", {"name": (text(64), True)}),
    kind("llm_update", "change a registered LLM's priority, timeout or model name (not its URL, key or role)",
         {"name": (text(64), True), "priority": (integer(-1_000_000, 1_000_000), False),
          "timeout_s": (number(1, 3600), False), "model": (text(256), False)},
         extra_note="; the URL, the API key variable and the validator role are the person's to change", closed=True),
)
