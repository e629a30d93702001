"""The argument types and annotations the tools share: typed, size-limited (the node checks again)."""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from meshnode.domain.names import MAX_PETNAME
from meshnode.domain.notes import MAX_TEXT

Did = Annotated[str, Field(min_length=6, max_length=200, description="a DID (did:key:... or did:hmp:container:...)"
                                                                      " or a short id this node knows")]
Agent = Annotated[str, Field(min_length=1, max_length=256, description="an agent: its DID (did:key:...), its petname,"
                                                                      " the name it announced, or its short id (key:...)")]
Petname = Annotated[str, Field(min_length=1, max_length=MAX_PETNAME,
                               description="what the person calls the agent here (kept on this node, never sent)")]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT, description="the text (at most 64 KiB)")]
Line = Annotated[str, Field(min_length=1, max_length=256)]
Word = Annotated[str, Field(min_length=1, max_length=64)]
Words = Annotated[list[Word], Field(max_length=64)]
Limit = Annotated[int, Field(ge=1, le=500, description="at most this many rows")]

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
ASK_MESH = ToolAnnotations(read_only_hint=True, open_world_hint=True)  # asks other nodes
ADD = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
ADD_SHARED = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=True)  # may reach other nodes (public, participants)
MARK = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
LOCAL_CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                              open_world_hint=False)  # replaces or forgets what is kept on this node only
CHANGE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
