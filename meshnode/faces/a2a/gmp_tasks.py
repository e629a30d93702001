"""A2A tasks that are GMP tasks (protocols/a2a.md section 3): ``gmp-<task lineage>`` names a GMP
task assigned to this agent, and ``tasks/get`` answers with its status from the lineage (control
command ``task_show``). A known party's message naming a goal (``metadata.goal``) becomes a GMP task
of that goal assigned to this agent (``task_add`` then ``task_assign`` to itself). Only known parties
read or make them: a GMP task may be private to its goal's participants. The actions run for the
party that asked (actor ``a2a``), so what it makes records who asked for it."""

from __future__ import annotations

from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from meshnode.faces.a2a.admission import Party
from meshnode.app import actor
from meshnode.base.errors import MeshnodeError

PREFIX = "gmp-"
MAX_ID = 200
TITLE_CHARS = 200
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


async def get(services, party: Party, task_id: str) -> Task:
    lineage = task_id[len(PREFIX):]
    if not party.known or not lineage or len(lineage) > MAX_ID:
        raise TaskNotFoundError(message=f"no task {task_id[:100]}")
    try:
        shown = await services.call("task_show", actor=actor.a2a(party.key, party.name), task=lineage)
    except MeshnodeError:
        raise TaskNotFoundError(message=f"no task {task_id[:100]}") from None
    if services.key.did not in shown.get("assigned_to", []):
        raise TaskNotFoundError(message=f"GMP task {lineage[:100]} is not assigned to this agent")
    return task_of(shown)


def goal_of(message) -> str | None:
    """The goal a message names (``metadata.goal``), or None."""
    field = message.metadata.fields.get("goal") if message.HasField("metadata") else None
    if field is None:
        return None
    goal = field.string_value
    if not goal or len(goal) > MAX_ID:
        raise InvalidParamsError(message="metadata.goal is a goal's lineage id or short id")
    return goal


async def create(services, party: Party, goal: str, text: str, framed: str) -> Task:
    """A GMP task of ``goal`` for this agent, asked for by ``party``: titled by the message's first
    line, described by it."""
    title = text.strip().split("\n", 1)[0][:TITLE_CHARS]
    by = actor.a2a(party.key, party.name)
    try:
        task = await services.call("task_add", actor=by, goal=goal, title=title, description=framed)
        await services.call("task_assign", actor=by, task=task["lineage"], candidates=[services.key.did])
        shown = await services.call("task_show", actor=by, task=task["lineage"])
    except MeshnodeError as exc:
        raise InvalidParamsError(message=f"no GMP task made in goal {goal[:100]}: {exc.code}: {exc.reason}"[:500])\
            from None
    return task_of(shown)
