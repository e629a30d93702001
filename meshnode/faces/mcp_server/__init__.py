"""meshnode as an MCP server (protocols/mcp.md): the node's tools and resources for MCP clients.

One tool set (``server.build_server``) over one async ``call(cmd, **args)``: the control socket for
``meshnode mcp`` (stdio, ``stdio.py``), ``Services.call`` for ``/mcp`` on the web server (``http.py``).
"""
