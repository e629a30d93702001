-- MeshConsensus decides a block of values per height (protocols/consensus.md): one row per
-- decided value, with its index in the block. The signed precommits (which sign the block id,
-- the Merkle root over the block's values) are kept once per height, on the row of index 0;
-- the other rows of the height hold an empty CBOR list (0x80). Rows decided before blocks
-- (one value per height, precommits over the value's SHA-256) become index 0 of their height.

CREATE TABLE consensus_decisions_blocks (
    committee      TEXT NOT NULL,
    height         INTEGER NOT NULL,
    idx            INTEGER NOT NULL,      -- the value's index in its height's block
    value          BLOB NOT NULL,
    round          INTEGER NOT NULL,
    precommits     BLOB NOT NULL,        -- deterministic CBOR list of the encoded signed precommits (idx 0)
    decided_at_ms  INTEGER NOT NULL,
    PRIMARY KEY (committee, height, idx)
);

INSERT INTO consensus_decisions_blocks (committee, height, idx, value, round, precommits, decided_at_ms)
    SELECT committee, height, 0, value, round, precommits, decided_at_ms FROM consensus_decisions;

DROP TABLE consensus_decisions;

ALTER TABLE consensus_decisions_blocks RENAME TO consensus_decisions;

