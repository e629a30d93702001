"""The engines: the agent's cycle (``cognition``), its safety gate (``gate``), the reactor that
wakes it, child nodes (``spawn``) and outside MCP tools (``mcp_tools``). They act through the
application layer (meshnode.app), as the faces do, and never import a face."""
