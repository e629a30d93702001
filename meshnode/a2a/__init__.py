"""The agent's A2A face (protocols/a2a.md): a signed agent card and a JSON-RPC endpoint on the web
server, built on the official a2a-sdk (its types, card signing and JSON-RPC dispatcher) with a request
handler of our own that runs on trio and delivers into the agent's conversation (``chat_send``)."""
