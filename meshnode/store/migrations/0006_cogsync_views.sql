-- CogSync knowledge as views of containers, like the diary (0005):
-- concepts (semantic_node) and links (semantic_edges) get one row per
-- lineage, and every versioned container records its lineage root, so an
-- arriving version touches only its own lineage instead of the whole class.
-- Tags of every container are indexed for selective sync.

CREATE TABLE container_versions (
    did    TEXT PRIMARY KEY REFERENCES containers (did),
    class  TEXT NOT NULL,
    root   TEXT NOT NULL,                      -- DID of the lineage's first version
    head   INTEGER NOT NULL DEFAULT 1          -- 1 while no held version replaces it
);
CREATE INDEX container_versions_by_root ON container_versions (root, head);

CREATE TABLE container_tags (
    did  TEXT NOT NULL REFERENCES containers (did),
    tag  TEXT NOT NULL,
    PRIMARY KEY (did, tag)
);
CREATE INDEX container_tags_by_tag ON container_tags (tag);

-- concepts.name was UNIQUE: two authors may well name a concept alike, so the
-- tables are rebuilt (any rows they hold are kept).
ALTER TABLE links RENAME TO links_v1;
ALTER TABLE concepts RENAME TO concepts_v1;

CREATE TABLE concepts (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL,
    description   TEXT,
    tags          TEXT,                          -- JSON array of strings
    timestamp     TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id        TEXT,
    lineage       TEXT UNIQUE,                   -- DID of the lineage's first version
    container_did TEXT,                          -- the version shown
    author_did    TEXT,
    aliases       TEXT,                          -- JSON array of strings
    forks         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX concepts_by_name ON concepts (name);

CREATE TABLE links (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    from_concept_id  INTEGER REFERENCES concepts (id) ON DELETE SET NULL,
    to_concept_id    INTEGER REFERENCES concepts (id) ON DELETE SET NULL,
    relation_type    TEXT,                       -- e.g. is_a, causes, related_to
    tags             TEXT,                       -- JSON array of strings
    timestamp        TEXT DEFAULT CURRENT_TIMESTAMP,
    llm_id           TEXT,
    lineage          TEXT,                       -- the semantic_edges lineage this row comes from
    container_did    TEXT,
    author_did       TEXT,
    from_did         TEXT,                       -- concept container DIDs as the edges name them
    to_did           TEXT,
    inverse_relation TEXT,
    bidirectional    INTEGER NOT NULL DEFAULT 0,
    context          TEXT,
    domain           TEXT
);
CREATE INDEX links_by_lineage ON links (lineage);
CREATE INDEX links_by_from ON links (from_did);
CREATE INDEX links_by_to ON links (to_did);

INSERT INTO concepts (id, name, description, tags, timestamp, llm_id)
    SELECT id, name, description, tags, timestamp, llm_id FROM concepts_v1;
INSERT INTO links (id, from_concept_id, to_concept_id, relation_type, tags, timestamp, llm_id)
    SELECT id, from_concept_id, to_concept_id, relation_type, tags, timestamp, llm_id FROM links_v1;
DROP TABLE links_v1;
DROP TABLE concepts_v1;

-- A friends note may travel on to friends of its recipients when its author
-- allowed it (payload.forward, 0 to 2 hops; see store/sharing.py).
ALTER TABLE notes ADD COLUMN forward INTEGER NOT NULL DEFAULT 0;
