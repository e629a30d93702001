"""The agent's A2A face (protocols/a2a.md): a signed agent card and a JSON-RPC endpoint on the web
server, built on the official a2a-sdk (its types, card signing and JSON-RPC dispatcher) with a request
handler of our own that runs on trio and delivers into the agent's conversation (``chat_send``).

a2a-sdk (and the grpc, pydantic... it brings) is loaded at the first request for the card or to
``/a2a``: the face (face.py), its limits (admission.py) and the delivery of approved messages
(delivery.py, held.py) run from the start without it."""

CARD_PATH = "/.well-known/agent-card.json"  # the signed agent card (card.py)
OLD_CARD_PATH = "/.well-known/agent.json"  # where A2A clients before 0.3 look for it: the same card
RPC_PATH = "/a2a"  # JSON-RPC (rpc.py, handler.py)
