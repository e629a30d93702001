"""Tools over the Goal Management Protocol (protocols/gmp.md): list, show and create goals and tasks,
update a task, review a task's result, cancel a goal (protocols/mcp.md 3.2). Each is the node's own ``goal_*``/``task_*``
control command: the GMP service signs, stores and pushes to the participants."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from meshnode.faces.mcp_server.calls import Call, run
from meshnode.faces.mcp_server.schema import ADD_SHARED, CHANGE, READ, Did, Line, Text, Words

WRITES = {"goal_add", "goal_cancel", "task_add", "task_update", "task_review"}
GoalStatus = Literal["proposed", "active", "paused", "completed", "cancelled", "failed"]
TaskStatus = Literal["pending", "in_progress", "paused", "completed", "failed", "abandoned"]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Texts = Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(max_length=64)]


def register(server, call: Call) -> None:
    @server.tool(annotations=READ)
    async def goal_list(status: GoalStatus | None = None, mine: bool = False):
        """Goals held here: status, title, priority, tasks open and total. ``mine``: only those this
        node creates, takes part in, or holds a task of."""
        return await run(call, "goal_list", status=status, me=True if mine else None)

    @server.tool(annotations=READ)
    async def goal_show(goal: Did):
        """One goal (its lineage DID or short id) with its tasks as a tree, each with its due state."""
        return await run(call, "goal_show", goal=goal)

    @server.tool(annotations=ADD_SHARED)
    async def goal_add(title: Line, description: Text | None = None, priority: Unit | None = None,
                       criteria: Texts | None = None, participants: Annotated[list[Did], Field(max_length=64)]
                       | None = None, public: bool = False, parent: Did | None = None, tags: Words | None = None):
        """Create a goal signed by this node (active); ``participants`` (agent DIDs) get it pushed;
        ``parent``: the goal this one is a subgoal of. Returns its lineage DID."""
        return await run(call, "goal_add", title=title, description=description, priority=priority,
                         criteria=criteria, participants=participants, public=public or None, parent=parent,
                         tags=tags)

    @server.tool(annotations=CHANGE)
    async def goal_cancel(goal: Did, reason: Line | None = None):
        """Cancel a goal this node created: its open tasks are abandoned (cannot be undone)."""
        return await run(call, "goal_cancel", goal=goal, reason=reason)

    @server.tool(annotations=READ)
    async def task_list(goal: Did | None = None, status: TaskStatus | None = None, mine: bool = False):
        """GMP tasks, newest first; ``goal``: only that goal's; ``mine``: created or held by this node."""
        return await run(call, "task_list", goal=goal, status=status, me=True if mine else None)

    @server.tool(annotations=READ)
    async def task_show(task: Did):
        """One task: its shown version, who held it and why it moved, its workflow entries."""
        return await run(call, "task_show", task=task)

    @server.tool(annotations=ADD_SHARED)
    async def task_add(goal: Did, title: Line, description: Text | None = None, parent: Did | None = None,
                       deadline_ms: Annotated[int, Field(ge=0)] | None = None, priority: Unit | None = None,
                       tags: Words | None = None):
        """Add a task to a goal (``parent``: the task it is a subtask of; ``deadline_ms``: Unix ms).
        Returns its lineage DID."""
        return await run(call, "task_add", goal=goal, title=title, description=description, parent=parent,
                         deadline_ms=deadline_ms, priority=priority, tags=tags)

    @server.tool(annotations=CHANGE)
    async def task_update(task: Did, status: TaskStatus | None = None, progress: Unit | None = None,
                          notes: Text | None = None, title: Line | None = None, reason: Line | None = None):
        """Change a task's status, progress, notes or title (the GMP rules say who may: gmp.md)."""
        return await run(call, "task_update", task=task, status=status, progress=progress, notes=notes,
                         title=title, reason=reason)

    @server.tool(annotations=CHANGE)
    async def task_review(task: Did, verdict: Literal["accept", "reject"], reason: Text | None = None,
                          reassign: bool = False):
        """Review the result of a finished task this node created: accept it, or reject it with a
        reason (required), which reopens it for its holders (``reassign``: takes it from them, to
        offer it again)."""
        return await run(call, "task_review", task=task, verdict=verdict, reason=reason, reassign=reassign)
