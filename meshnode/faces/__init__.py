"""The faces: the CLI, the control socket's server, the web notebook, the MCP server and A2A.
Each says who asks (an app Actor) and calls meshnode.app; none imports another (the node puts
the web, /mcp and A2A on one listener: meshnode.node.http)."""
