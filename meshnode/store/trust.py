"""Trust scores as the store knows them: the newest ``agent_reputation`` score per agent.

Reputation (its evidence and update rule) writes them; sync (min_trust), the
version rule and consensus read them through here.
"""

from __future__ import annotations

import sqlite3
from typing import Iterable


def trust_scores(conn: sqlite3.Connection, agents: Iterable[str]) -> dict[str, float]:
    """Score in [0, 1] of each agent that has one; agents without one are left out."""
    out = {}
    for did in set(agents):
        row = conn.execute("SELECT reputation_score FROM agent_reputation WHERE agent_id = ?"
                           " ORDER BY id DESC LIMIT 1", (did,)).fetchone()
        if row is not None and row[0] is not None:
            out[did] = min(1.0, max(0.0, float(row[0])))
    return out
