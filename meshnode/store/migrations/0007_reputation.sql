-- Reputation (protocols/reputation.md; meshnode/reputation/).
--
-- agent_reputation (0001) gets one row per update of a peer's score: the
-- newest row by id is current (store/trust.py reads it), older rows are the
-- history HMP's ReputationProfile keeps. The model's state is stored beside
-- the score, so the next update continues from it. Rows written by anyone
-- else (with only reputation_score) still read as a score.

ALTER TABLE agent_reputation ADD COLUMN updated_ms INTEGER;                    -- the time reputation_score refers to
ALTER TABLE agent_reputation ADD COLUMN capped_until_ms INTEGER NOT NULL DEFAULT 0;  -- equivocation hold
ALTER TABLE agent_reputation ADD COLUMN counts TEXT NOT NULL DEFAULT '{}';     -- JSON kind -> count, cumulative
ALTER TABLE agent_reputation ADD COLUMN applied TEXT NOT NULL DEFAULT '{}';    -- JSON kind -> count, this update
CREATE INDEX agent_reputation_by_agent ON agent_reputation (agent_id, id);

-- Evidence that names its object (an equivocation proof, a task, a validated
-- response) counts once, however often it is reported.
CREATE TABLE reputation_evidence (
    did    TEXT NOT NULL REFERENCES agent_peers (id) ON DELETE CASCADE,
    kind   TEXT NOT NULL,
    ref    TEXT NOT NULL,
    at_ms  INTEGER NOT NULL,
    PRIMARY KEY (did, kind, ref)
) WITHOUT ROWID;

-- How much of peer_standing and peer_liveness has been turned into evidence,
-- so folding them in again counts nothing twice.
CREATE TABLE reputation_watermarks (
    did          TEXT PRIMARY KEY REFERENCES agent_peers (id) ON DELETE CASCADE,
    valid        INTEGER NOT NULL DEFAULT 0,
    invalid      INTEGER NOT NULL DEFAULT 0,
    liveness_ms  INTEGER NOT NULL DEFAULT 0
);

-- The newest trust container this node published about each peer (its next
-- one names it as related.previous_version).
CREATE TABLE reputation_published (
    did            TEXT PRIMARY KEY,
    container_did  TEXT NOT NULL REFERENCES containers (did),
    score          REAL NOT NULL,
    at_ms          INTEGER NOT NULL
);
