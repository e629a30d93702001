"""Validation by trusted peers over the mesh (seed 000, the validation reflex, "where the mesh is up").

Who counts as trusted: the user's friends and any peer whose reputation
reaches ``min_trust``. The same rule decides both directions: the peers this
node asks for a verdict (the ``k`` most trusted of those connected), and the
peers it lends its own validator LLM to. A peer's vote weighs by the trust
this node holds of it. What a peer sees: the answer and the prompt it answered
(without the system prompt), so only trusted peers are asked; ``[cognition]
peer_validators = 0`` keeps validation on this host.
"""

from __future__ import annotations

from meshnode.records.mind import registry
from meshnode.engines.cognition.validation import judge_for_peer
from meshnode.store.database import Database
from meshnode.store.peers import peer_trust
from meshnode.store.sharing import friends


def trusted(db: Database, dids: list[str], min_trust: float) -> dict[str, float]:
    """Of ``dids``, those trusted enough to validate (friends, or trust >= min_trust), with their trust."""
    mine = set(friends(db))
    scores = {did: peer_trust(db, did) for did in dids}
    return {did: t for did, t in scores.items() if did in mine or t >= min_trust}


def choose(trusted_peers: dict[str, float], k: int) -> list[tuple[str, float]]:
    """The ``k`` most trusted (ties by DID, so the choice is deterministic)."""
    return sorted(trusted_peers.items(), key=lambda p: (-p[1], p[0]))[:k]


async def pool(store, connected: list[str], k: int, min_trust: float) -> list[tuple[str, float]]:
    if k <= 0 or not connected:
        return []
    return choose(await store.read(trusted, connected, min_trust), k)


async def may_ask_us(store, did: str, min_trust: float) -> bool:
    return did in await store.read(trusted, [did], min_trust)


async def judge(store, prompt: str, answer: str) -> tuple[int, str]:
    """This node's verdict for a peer: its validator LLMs first, then its main ones."""
    endpoints = await store.read(registry.endpoints)
    ordered = [e for e in endpoints if e.validator] + [e for e in endpoints if not e.validator]
    return await judge_for_peer(ordered, prompt, answer)
