"""A2A tasks that are GMP tasks (protocols/a2a.md section 3.1): ``gmp-<task lineage>`` names a GMP
task assigned to this agent, and ``tasks/get`` answers with its status from the lineage (control
command ``task_show``). Only known parties read them: a GMP task may be private to its goal's
participants."""

from __future__ import annotations

from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import TaskNotFoundError

from meshnode.errors import MeshnodeError

PREFIX = "gmp-"
MAX_ID = 200
STATES = {"pending": TaskState.TASK_STATE_SUBMITTED, "in_progress": TaskState.TASK_STATE_WORKING,
          "paused": TaskState.TASK_STATE_WORKING, "completed": TaskState.TASK_STATE_COMPLETED,
          "failed": TaskState.TASK_STATE_FAILED, "abandoned": TaskState.TASK_STATE_CANCELED}


def task_of(shown: dict) -> Task:
    """The A2A task of a ``task_show`` result: state from the lineage's status, progress in the text."""
    progress = shown.get("progress")
    text = f"{shown['title']}: {shown['status']}" + (f", progress {progress:.0%}" if isinstance(progress, (int, float))
                                                     else "")
    if shown.get("notes"):
        text += f"\n{str(shown['notes'])[:2000]}"
    message = Message(message_id=f"status-{shown['container_did']}", role=Role.ROLE_AGENT, parts=[Part(text=text)],
                      context_id=f"{PREFIX}{shown['goal_lineage']}")
    return Task(id=f"{PREFIX}{shown['lineage']}", context_id=f"{PREFIX}{shown['goal_lineage']}",
                status=TaskStatus(state=STATES.get(shown["status"], TaskState.TASK_STATE_UNSPECIFIED), message=message))


async def get(services, task_id: str, known: bool) -> Task:
    lineage = task_id[len(PREFIX):]
    if not known or not lineage or len(lineage) > MAX_ID:
        raise TaskNotFoundError(message=f"no task {task_id[:100]}")
    try:
        shown = await services.call("task_show", task=lineage)
    except MeshnodeError:
        raise TaskNotFoundError(message=f"no task {task_id[:100]}") from None
    if services.key.did not in shown.get("assigned_to", []):
        raise TaskNotFoundError(message=f"GMP task {lineage[:100]} is not assigned to this agent")
    return task_of(shown)
