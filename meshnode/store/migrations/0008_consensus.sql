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
