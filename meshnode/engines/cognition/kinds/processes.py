"""The types of the process commands: start and stop (the cycle runs them) and the store-side list, mark, cleanup."""

from __future__ import annotations

from meshnode.engines.cognition.command_kind import kind
from meshnode.base.container.schema import integer, list_of, number, one_of, text

TYPES = (
    kind("process_start", "run an allowed program in the workspace (no shell); its result comes back in a later tick",
         {"program": (text(64), True), "args": (list_of(text(4096), max_items=64), False),
          "task_id": (integer(0), False), "timeout_s": (number(1, 7 * 86400), False)}),
    kind("process_stop", "stop a running process", {"id": (integer(0), True)}),
    kind("process_list", "processes, running first", {"status": (one_of(
        "running", "exited", "failed", "timeout", "stopped", "lost"), False), "limit": (integer(1, 500), False)},
        mutating=False),
    kind("process_mark", "mark a process's result handled (it leaves the context)", {"id": (integer(0), True)}),
    kind("process_cleanup", "delete handled process records (and closed log lines) older than N hours",
         {"older_than_hours": (number(0, 24 * 365), False)}),
)
