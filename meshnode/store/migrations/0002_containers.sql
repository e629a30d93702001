-- meshnode's own tables: the signed containers, and what links the HMP agent
-- tables (0001) to them.
--
-- Containers are immutable; the agent tables are views rebuilt from them
-- (meshnode/store/views.py), plus purely local columns (read marks, local
-- tags, hidden) that never travel.

CREATE TABLE containers (
    did             TEXT PRIMARY KEY,          -- did:hmp:container:u..., derived from the signed bytes
    class           TEXT NOT NULL,
    class_version   TEXT NOT NULL,
    sender_did      TEXT NOT NULL,
    timestamp_ms    INTEGER NOT NULL,          -- head.timestamp, epoch milliseconds
    expires_ms      INTEGER,                   -- head.ttl, NULL when none
    known_class     INTEGER NOT NULL CHECK (known_class IN (0, 1)),
    core            BLOB NOT NULL,             -- exact signed envelope bytes (no side blocks)
    side            BLOB,                      -- unsigned side blocks as one CBOR map, NULL when none
    received_at_ms  INTEGER NOT NULL,
    received_from   TEXT                       -- peer DID it came from; NULL when made here
);  -- a rowid table: rows hold whole containers, too large for WITHOUT ROWID to pay off

CREATE INDEX containers_by_class ON containers (class, timestamp_ms);
CREATE INDEX containers_by_sender ON containers (sender_did, timestamp_ms);
CREATE INDEX containers_by_time ON containers (timestamp_ms, did);

-- related links, for "who points at X" (previous_version forks, replies, votes on X)
CREATE TABLE container_links (
    source_did  TEXT NOT NULL REFERENCES containers (did) ON DELETE CASCADE,
    relation    TEXT NOT NULL,
    target_did  TEXT NOT NULL,
    PRIMARY KEY (source_did, relation, target_did)
) WITHOUT ROWID;

CREATE INDEX container_links_by_target ON container_links (target_did, relation);

-- notes become a view of note containers (plus local columns)
ALTER TABLE notes ADD COLUMN container_did TEXT REFERENCES containers (did);
ALTER TABLE notes ADD COLUMN audience TEXT NOT NULL DEFAULT 'private'
    CHECK (audience IN ('private', 'friends', 'public'));
CREATE UNIQUE INDEX notes_by_container ON notes (container_did);
