"""Outside tools for the agent: MCP servers the node connects to as a client (issue 20; seed 000 item 12).

meshnode.base.config.mcp reads ``[mcp.servers.NAME]``; ``clients`` keeps one connection per
server (a trio task each, reconnecting with backoff) and the tools each lists;
``transport`` runs a stdio server in the gate's sandbox; ``calls`` is the gated
call (schema check, risk, confirmation, timeout, size limit) and what the LLM
sees of the tools. Design: protocols/mcp-tools.md.
"""
