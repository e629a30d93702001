-- MeshConsensus: the values a committee decided, with the signed precommits
-- that prove it (anyone can check them), and the provisional decisions a node
-- took alone in emergency mode (HMP `emergency_consensus`) until revisited.

CREATE TABLE consensus_decisions (
    committee      TEXT NOT NULL,
    height         INTEGER NOT NULL,
    value          BLOB NOT NULL,
    round          INTEGER NOT NULL,
    precommits     BLOB NOT NULL,        -- deterministic CBOR list of the encoded signed precommits
    decided_at_ms  INTEGER NOT NULL,
    PRIMARY KEY (committee, height)
);

CREATE TABLE consensus_emergency (
    committee      TEXT NOT NULL,
    height         INTEGER NOT NULL,
    value          BLOB NOT NULL,
    tag            TEXT NOT NULL DEFAULT 'emergency_consensus',
    decided_at_ms  INTEGER NOT NULL,
    revisited      TEXT CHECK (revisited IN ('confirmed', 'overturned')),  -- NULL until the committee decides
    PRIMARY KEY (committee, height)
);

-- Committees by epoch: the genesis committee comes from the configuration;
-- each later one was derived from the trust statements a decided committee
-- value listed (consensus/epochs.py), and rules from `from_height` on.
CREATE TABLE consensus_epochs (
    epoch        INTEGER PRIMARY KEY,
    committee    TEXT NOT NULL,
    weights      TEXT NOT NULL,            -- JSON object: validator DID -> integer weight
    from_height  INTEGER NOT NULL,
    decided_at_ms INTEGER NOT NULL
);
