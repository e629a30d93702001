-- The network's view of other nodes: agent_peers (HMP) kept current from
-- announces, bootstrap and connections, plus liveness from heartbeats and the
-- standing counters the reputation work will read.

ALTER TABLE agent_peers ADD COLUMN peer_id TEXT;          -- the libp2p peer id of the same key
ALTER TABLE agent_peers ADD COLUMN announce_did TEXT;     -- container DID of the newest announce seen
ALTER TABLE agent_peers ADD COLUMN interests TEXT;        -- JSON array, from the announce

CREATE TABLE peer_liveness (
    did             TEXT PRIMARY KEY REFERENCES agent_peers (id) ON DELETE CASCADE,
    state           TEXT NOT NULL CHECK (state IN ('ok', 'quiet', 'stale', 'dead')),
    last_heard_ms   INTEGER NOT NULL,
    last_seq        INTEGER NOT NULL DEFAULT -1,
    changed_at_ms   INTEGER NOT NULL
);

CREATE TABLE peer_standing (
    did             TEXT PRIMARY KEY REFERENCES agent_peers (id) ON DELETE CASCADE,
    valid           INTEGER NOT NULL DEFAULT 0,
    invalid         INTEGER NOT NULL DEFAULT 0,
    invalid_by_code TEXT NOT NULL DEFAULT '{}',   -- JSON object code -> count
    rate_limited    INTEGER NOT NULL DEFAULT 0,
    banned_until_ms INTEGER NOT NULL DEFAULT 0,
    updated_at_ms   INTEGER NOT NULL
);
