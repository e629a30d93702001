"""The node: the composition root. ``run`` builds every part by constructor injection and runs
them in one nursery (``meshnode run``); ``http`` puts the web notebook, /mcp and A2A on one
listener."""
